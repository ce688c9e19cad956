import { pino, type Logger } from "pino";

/**
 * Structured JSON logs on stderr. `level`: trace, debug, info, warn, error, fatal or silent.
 * Written synchronously (pino's default for its own destination): a line logged just before
 * `process.exit` ("owner stopped", a fatal error) is never lost in a buffer.
 */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "chronolog" } }, pino.destination({ dest: 2, sync: true }));
}

export type { Logger };
