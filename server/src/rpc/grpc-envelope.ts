// gRPC message framing of a unary request (5-byte prefix: a compressed flag and a length).

import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Collects the gRPC envelopes of a unary request as its bytes arrive: refuses a message
 * over `readMaxBytes` as soon as its length prefix is in, and a second message as soon
 * as it is complete, with connect's codes and messages.
 */
export class EnvelopeReader {
  private chunks: Buffer[] = [];
  private received = 0;
  /** Offset of the envelope being read, and its end once its 5-byte prefix is in (-1 before). */
  private start = 0;
  private end = -1;
  private complete = 0;

  constructor(private readonly readMaxBytes: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.received += chunk.length;
    for (;;) {
      if (this.end < 0) {
        if (this.received - this.start < 5) return;
        const length = this.uint32At(this.start + 1);
        if (length > this.readMaxBytes) {
          throw new ConnectError(`message size ${length} is larger than configured readMaxBytes ${this.readMaxBytes}`, Code.ResourceExhausted);
        }
        this.end = this.start + 5 + length;
      }
      if (this.received < this.end) return;
      if (++this.complete > 1) throw new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented);
      this.start = this.end;
      this.end = -1;
    }
  }

  /** The one message of the request, once the request ended. */
  single(): { flags: number; data: Uint8Array } {
    if (this.received === 0) throw new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
    if (this.complete === 0 || this.received > this.start) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    return { flags: all[0], data: all.subarray(5, this.start) };
  }

  private uint32At(offset: number): number {
    return ((this.byteAt(offset) << 24) | (this.byteAt(offset + 1) << 16) | (this.byteAt(offset + 2) << 8) | this.byteAt(offset + 3)) >>> 0;
  }

  private byteAt(offset: number): number {
    for (const chunk of this.chunks) {
      if (offset < chunk.length) return chunk[offset];
      offset -= chunk.length;
    }
    return 0;
  }
}
