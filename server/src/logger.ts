import { pino, type Logger } from "pino";

/** Structured JSON logs on stderr (O3). `level`: trace, debug, info, warn, error, fatal or silent. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "chronolog" } }, pino.destination(2));
}

export type { Logger };
