/** No column is cut narrower than this (or its header, when shorter). */
const minColumn = 8;

/**
 * A plain-text table: a header row and aligned columns separated by two spaces, each column as
 * wide as its widest cell. Returns the lines, without a trailing newline.
 *
 * When the table is wider than `width` (the terminal's columns; see {@link terminalWidth}), the
 * widest of the `cuttable` columns (free text: a timer's WHEN, an error) is cut to fit, again
 * and again, down to {@link minColumn}: its cut cells end with "…". Ids, names and numbers are
 * never cut (the terminal wraps what is still too wide); `--json` prints every value whole.
 */
export function formatTable(header: string[], rows: string[][], cuttable: string[] = [], width = terminalWidth()): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  fitWidths(widths, header, cuttable, width);
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => {
        const text = cell.length > widths[i] ? `${cell.slice(0, widths[i] - 1)}…` : cell;
        return i === cells.length - 1 ? text : text.padEnd(widths[i]);
      })
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** The terminal's width when stdout is one (its columns, else `COLUMNS`), else Infinity: a pipe or a file gets whole cells. */
export function terminalWidth(): number {
  if (!process.stdout.isTTY) return Infinity;
  const columns = process.stdout.columns || Number(process.env.COLUMNS);
  return columns > 0 ? columns : Infinity;
}

/** Narrows the widest cuttable column, one character at a time, until the line fits `width`. */
function fitWidths(widths: number[], header: string[], cuttable: string[], width: number): void {
  const floor = header.map((h, i) => (cuttable.includes(h) ? Math.min(widths[i], Math.max(minColumn, h.length)) : widths[i]));
  let total = widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1);
  while (total > width) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++) if (widths[i] > floor[i] && (widest < 0 || widths[i] > widths[widest])) widest = i;
    if (widest < 0) return; // nothing left to cut: the terminal wraps what is left
    widths[widest]--;
    total--;
  }
}
