// The mapping file (OA_FORM_MAPPING): which field of an approval form is the customer, where the
// currency comes from, and which detail table and columns hold the lines — with a shared default
// and a section per OA, since each OA's form names its fields its own way. A section is named by its
// vendor's id; which vendors there are is the caller's to say (vendors/registry.ts). `mapForm` turns a form
// into the order every entry point accepts, validated by domain/order-input.ts; every way a form
// can fail to map is one reason naming the form's own field, row or column.
//
// Pure and importable by workflow code: no Node built-ins.
import { z } from 'zod';
import type { OaVendor } from './oa-approval.js';
import { type Approval, orderSchema } from './order-input.js';

/** A form as named values, in the vendor-neutral shape the approval readers give it. */
export interface FormValues {
  fields: Record<string, string>;
  tables: Record<string, Array<Record<string, string>>>;
}

const label = z.string().min(1, 'must name a form field').max(200);

const currencySource = z.union([
  z.strictObject({ field: label }),
  z.strictObject({ value: z.string().regex(/^[A-Z]{3}$/, 'must be three capital letters') }),
]);

const linesSource = z.strictObject({
  /** The detail table (Feishu `fieldList`, DingTalk `TableField`, WeCom `Table`) by its label. */
  table: label,
  sku: label,
  quantity: label,
  unitPrice: label,
});

const sectionSchema = z.strictObject({
  /**
   * The approval definitions whose instances are orders (Feishu `approval_code`, DingTalk
   * `processCode`, WeCom `TemplateId`); unset: every approval definition. An OA pushes the events
   * of all its definitions — leave requests, expenses — and those of others are acknowledged and
   * ignored.
   */
  definitions: z.array(z.string().min(1).max(128)).min(1, 'must list at least one code, or be left out').optional(),
  customer: z.strictObject({ field: label }).optional(),
  currency: currencySource.optional(),
  lines: linesSource.optional(),
});

const PARTS = ['customer', 'currency', 'lines'] as const;

/**
 * The mapping file for the OA vendors `vendors` (vendors/registry.ts): a section of another name is
 * refused, and every part must be mapped for each vendor, by its section or the default.
 */
export function formMappingFileSchema(vendors: readonly OaVendor[]) {
  return z
    .strictObject({
      /** Free text for the reader of the file; ignored. */
      description: z.string().optional(),
      /** What every OA's form shares; a vendor's section replaces any part of it. */
      default: sectionSchema.optional(),
      /** A section per vendor, under its id. */
      vendors: z.record(z.string(), sectionSchema).optional(),
    })
    .superRefine((file, ctx) => {
      for (const name of Object.keys(file.vendors ?? {})) {
        if (!vendors.includes(name)) {
          ctx.addIssue({
            code: 'custom',
            path: ['vendors', name],
            message: `no OA vendor is called "${name}" (the vendors: ${vendors.join(', ')})`,
          });
        }
      }
      for (const vendor of vendors) {
        const section = sectionOf(file.vendors, vendor);
        for (const part of PARTS) {
          if (file.default?.[part] === undefined && section?.[part] === undefined) {
            ctx.addIssue({
              code: 'custom',
              path: ['default', part],
              message: `required: no mapping for "${part}" here nor in vendors.${vendor}`,
            });
          }
        }
      }
    });
}

export type FormMappingFile = z.output<ReturnType<typeof formMappingFileSchema>>;
type Section = z.output<typeof sectionSchema>;

/** A vendor's own section, never a property of the object's prototype. */
function sectionOf(sections: Record<string, Section> | undefined, vendor: OaVendor): Section | undefined {
  return sections === undefined ? undefined : own(sections, vendor);
}

/** The mapping of one OA's form: every part resolved. */
export interface FormMapping {
  customer: { field: string };
  currency: { field: string } | { value: string };
  lines: z.output<typeof linesSource>;
}

/** The mapping for one OA: its own section's parts, the default's for the rest. */
export function mappingFor(file: FormMappingFile, vendor: OaVendor): FormMapping {
  const section = sectionOf(file.vendors, vendor);
  const customer = section?.customer ?? file.default?.customer;
  const currency = section?.currency ?? file.default?.currency;
  const lines = section?.lines ?? file.default?.lines;
  // The schema refuses a file that leaves a part unmapped for any OA.
  if (!customer || !currency || !lines) throw new Error(`the form mapping leaves ${vendor} incomplete`);
  return { customer, currency, lines };
}

/** Whether an instance of this approval definition is an order, per the vendor's or the shared list. */
export function isOrderDefinition(file: FormMappingFile, vendor: OaVendor, code: string | undefined): boolean {
  const listed = sectionOf(file.vendors, vendor)?.definitions ?? file.default?.definitions;
  return listed === undefined || (code !== undefined && listed.includes(code));
}

export type MappedForm = { ok: true; order: Approval['order'] } | { ok: false; reasons: string[] };

const QUANTITY_TEXT = /^\d{1,9}$/;

/**
 * Reads an order out of a form. Never throws: a missing field, table or column, a quantity that is
 * not a whole number, and every rule of the order itself (domain/order-input.ts) come back as
 * reasons, each naming where in the form it is.
 */
export function mapForm(form: FormValues, mapping: FormMapping): MappedForm {
  const reasons: string[] = [];
  const fieldName = (name: string) => `field "${name}"`;
  const cellName = (row: number, column: string) => `table "${mapping.lines.table}" row ${row + 1} column "${column}"`;
  const fieldValue = (name: string): string | undefined => {
    const value = own(form.fields, name);
    if (value === undefined) reasons.push(`${fieldName(name)}: missing from the form`);
    return value;
  };

  const customerId = fieldValue(mapping.customer.field);
  const currency = 'value' in mapping.currency ? mapping.currency.value : fieldValue(mapping.currency.field);
  const rows = own(form.tables, mapping.lines.table);
  if (rows === undefined) reasons.push(`table "${mapping.lines.table}": missing from the form`);

  const columns = { sku: mapping.lines.sku, quantity: mapping.lines.quantity, unitPrice: mapping.lines.unitPrice };
  const lines = (rows ?? []).map((row, index) => {
    const cell = (column: string): string | undefined => {
      const value = own(row, column);
      if (value === undefined) reasons.push(`${cellName(index, column)}: missing`);
      return value;
    };
    const sku = cell(columns.sku);
    const quantityText = cell(columns.quantity);
    const unitPrice = cell(columns.unitPrice);
    let quantity: number | undefined;
    if (quantityText !== undefined) {
      if (QUANTITY_TEXT.test(quantityText)) quantity = Number(quantityText);
      else reasons.push(`${cellName(index, columns.quantity)}: must be a whole number, got ${quoted(quantityText)}`);
    }
    return { sku, quantity, unitPrice };
  });
  if (reasons.length > 0) return { ok: false, reasons };

  const parsed = orderSchema.safeParse({ customerId, currency, lines });
  if (parsed.success) return { ok: true, order: parsed.data };
  // Each rule broken by the order becomes a reason at the form's own name for the value.
  const whereIs = (path: readonly PropertyKey[]): string => {
    const [first, row, column] = path;
    if (first === 'customerId') return fieldName(mapping.customer.field);
    if (first === 'currency') {
      return 'value' in mapping.currency ? "the mapping's fixed currency" : fieldName(mapping.currency.field);
    }
    if (first === 'lines' && typeof row === 'number' && typeof column === 'string') {
      return cellName(row, columns[column as keyof typeof columns] ?? column);
    }
    if (first === 'lines' && typeof row === 'number') return `table "${mapping.lines.table}" row ${row + 1}`;
    return `table "${mapping.lines.table}"`;
  };
  return {
    ok: false,
    reasons: parsed.error.issues.map((issue) => `${whereIs(issue.path)}: ${issue.message}`),
  };
}

/** A value the object holds itself (never one from its prototype, whatever the form's labels are). */
function own<T>(values: Record<string, T>, name: string): T | undefined {
  return Object.prototype.hasOwnProperty.call(values, name) ? values[name] : undefined;
}

function quoted(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}
