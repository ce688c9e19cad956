// Preloaded into an owner process (with --expose-gc) by memory tests: a full
// collection every half second, so its RSS shows what it retains rather than
// when V8 chose to collect.
setInterval(() => globalThis.gc(), 500).unref();
