// Reads the OA form mapping file (OA_FORM_MAPPING) at start: a file that is missing, not JSON or
// not a mapping stops start-up with its path, the JSON pointer of what is wrong, and why.
import { readFileSync } from 'node:fs';
import { type FormMappingFile, formMappingFileSchema } from '../../domain/form-mapping.js';
import { toFieldErrors } from '../../domain/order-input.js';

export type FormMappingRead = { ok: true; mapping: FormMappingFile } | { ok: false; problems: string[] };

/** Reads the file at `path`, a mapping for the OA vendors `vendors` (vendors/registry.ts). */
export function readFormMappingFile(path: string, vendors: readonly string[]): FormMappingRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return { ok: false, problems: [`OA_FORM_MAPPING: ${path}: cannot be read (${(error as Error).message})`] };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, problems: [`OA_FORM_MAPPING: ${path}: not valid JSON (${(error as Error).message})`] };
  }
  const parsed = formMappingFileSchema(vendors).safeParse(json);
  if (parsed.success) return { ok: true, mapping: parsed.data };
  return {
    ok: false,
    problems: toFieldErrors(parsed.error).map(
      (error) => `OA_FORM_MAPPING: ${path} at ${error.pointer || '/'}: ${error.message}`,
    ),
  };
}
