// Generators of raw failure text for property tests of what an outsider is told of a failure,
// shared by the classification's unit properties and the status answer's integration properties:
// text as failures carry it — a database host, addresses, a vendor's errmsg, form values — with
// the parts no public answer may repeat, and every type a key's record may name.
import fc from 'fast-check';
import { type PublicError, RECORDED_OUTCOMES, TABLE, UNCLASSIFIED_TOLD } from '../../domain/error-classification.js';

export interface RawError {
  text: string;
  /** The parts of `text` no public answer may carry. */
  parts: string[];
}

export const rawErrorText: fc.Arbitrary<RawError> = fc
  .tuple(
    fc.ipV4(),
    fc.domain(),
    fc.integer({ min: 1, max: 65_535 }),
    fc.stringMatching(/^[A-Za-z0-9]{6,16}$/),
    fc.ipV4(),
  )
  .map(([ip, domain, port, value, egress]) => {
    const host = `db.${domain}`;
    const form = `FORM-${value}`;
    return {
      text: `connect ECONNREFUSED ${ip}:${port} (${host}); errmsg: egress ${egress} denied; customer=${form}`,
      parts: [ip, host, form, egress, 'ECONNREFUSED', 'errmsg'],
    };
  });

/** Every type a key's record may name — the table's rows, the recorded outcomes, and none — with what is told of it. */
export const TOLD_TYPES: readonly (readonly [type: string, told: PublicError])[] = [
  ...TABLE.map((row) => [row.errorClass, row.told] as const),
  ...Object.entries(RECORDED_OUTCOMES),
  ['Unclassified', UNCLASSIFIED_TOLD] as const,
];
