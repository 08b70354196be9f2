// RFC 9457 problem details: every error answer of the HTTP API, and the one place that maps typed
// errors to status codes.
import type { FieldError } from '../../domain/order-input.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
// Relative references (RFC 9457 §3.1.1), documented in the README under "Errors".
const TYPE_BASE = '/problems/';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export class HttpProblem extends Error {
  constructor(
    readonly problem: Problem,
    readonly headers: Record<string, string> = {},
  ) {
    super(problem.detail);
    this.name = 'HttpProblem';
  }
}

export function problem(
  slug: string,
  status: number,
  title: string,
  detail: string,
  extensions: Record<string, unknown> = {},
): Problem {
  return { type: TYPE_BASE + slug, title, status, detail, ...extensions };
}
