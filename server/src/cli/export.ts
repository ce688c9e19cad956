import { Code, ConnectError } from "@connectrpc/connect";
import { exportArchive } from "../archive/export.js";
import { ownerVersion } from "../version.js";
import { client, type ClientFlags } from "./client-commands.js";

/** Options of `chronolog export`. */
export interface ExportFlags extends ClientFlags {
  from: number;
  to?: number;
  fileEvents: number;
  fileBytes: number;
}

/**
 * `chronolog export FOLDER [--from SEQ] [--to SEQ]`: writes the log's events from `--from` to
 * `--to` (default: the head when it starts) into FOLDER as an archive (archive/export.ts), read
 * through ReadLog as an admin; prints a line per file, then the whole.
 */
export async function exportCommand(folder: string, flags: ExportFlags): Promise<void> {
  if (flags.to !== undefined && flags.to < flags.from) throw new Error(`--to ${flags.to} is before --from ${flags.from}`);
  const c = client(flags);
  try {
    await c.admin.listProcessors({});
  } catch (e) {
    if (e instanceof ConnectError && e.code === Code.PermissionDenied)
      throw new Error("export needs an admin's token: another principal reads only the events of its spaces, so the archive would miss events");
    throw e;
  }
  const manifest = await exportArchive((request) => c.log.readLog(request), folder, {
    from: flags.from,
    to: flags.to,
    fileEvents: flags.fileEvents,
    fileBytes: flags.fileBytes,
    writtenBy: `chronolog ${ownerVersion}`,
    onFile: (f) => console.log(`${f.name}: ${f.events} events, ${f.bytes} bytes`),
  });
  const { files } = manifest;
  const seqs = files.length === 0 ? "" : `, seqs ${files[0].firstSeq} to ${files[files.length - 1].lastSeq}`;
  console.log(`exported ${manifest.events} events${seqs} in ${files.length} files to ${folder} (range ${manifest.from} to ${manifest.to})`);
}
