// Plain-text tables for the operator CLI's human output.

/** Left-aligned columns, two spaces apart; `-` for empty cells. */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = rows.map((row) =>
    row.map((cell) => (cell === null || cell === undefined || cell === '' ? '-' : String(cell))),
  );
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...cells.map((row) => row[column]?.length ?? 0)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((width) => '-'.repeat(width))), ...cells.map(line)].join('\n');
}

/** `key: value` lines, keys aligned. */
export function fields(entries: [string, string | number | null | undefined][]): string {
  const width = Math.max(...entries.map(([key]) => key.length));
  return entries
    .filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([key, value]) => `${`${key}:`.padEnd(width + 2)}${value}`)
    .join('\n');
}
