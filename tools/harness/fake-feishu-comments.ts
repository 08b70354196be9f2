// The fake Feishu's approval comments, as the receipts use them: `POST
// /open-apis/approval/v4/instances/:instance_id/comments` (a comment on an instance, as the user the
// query names; no idempotency key: each POST adds one) and `GET` on the same path (the instance's
// comments, a page at a time with `page_token`), each with the tenant token the fake issued and the
// `user_id_type` and `user_id` Feishu requires. A test reads an instance's comments and scripts
// faults for the next posts: a comment created whose answer comes only after some time (the
// client's timeout fires first), or a refusal with a status and Feishu's code.
import { randomBytes } from 'node:crypto';
import type { Answer, RequestContext } from './fake-oa-api.js';

/** Feishu's code for an approval instance it does not know. */
export const FEISHU_INSTANCE_NOT_FOUND = 1390003;
/** Feishu's code for a request parameter it refuses. */
const FEISHU_INVALID_PARAMETER = 1390001;

export interface FakeFeishuComment {
  id: string;
  instanceId: string;
  /** The comment's content as posted: a JSON string with its `text`. */
  content: string;
  /** Its text, read from the content. */
  text: string;
  /** Who it is posted as (the query's user_id). */
  commentator: string;
  extra: string | undefined;
  createdAt: number;
}

export type CommentFault = (
  | /** Create the comment now, answer only after `ms`. */
  { kind: 'answer-after'; ms: number }
  /** Create nothing, answer this HTTP status with `code`. */
  | { kind: 'status'; status: number; code?: number }
) & {
  /** Only for a post on this instance; others are answered as if no fault were scripted. */
  instanceId?: string;
};

export interface FakeFeishuComments {
  /** The comments on `instanceId`, oldest first. */
  commentsOn(instanceId: string): FakeFeishuComment[];
  /** Every comment POST that arrived, refused or not. */
  postRequests(): number;
  /** Every comment list GET that arrived. */
  listRequests(): number;
  /** Replies for the next posts, in order; then posts are answered at once. */
  scriptPosts(faults: CommentFault[]): void;
  /** Adds a comment as if posted earlier (a receipt posted before a worker died). */
  seed(comment: { instanceId: string; text: string; commentator: string }): void;
  /** Answers a comments request, or undefined when it is not one. */
  answer(method: string, url: URL, body: unknown, request: RequestContext): Answer | undefined;
}

const COMMENTS_PATH = /^\/open-apis\/approval\/v4\/instances\/([^/]+)\/comments$/;
/** Comments per page when the request names no page_size, and the most it may name. */
const PAGE_SIZE = 20;
const MAX_PAGE_SIZE = 100;

const refused = (status: number, code: number, msg: string): Answer => ({ status, body: { code, msg } });

function textOf(content: unknown): string | undefined {
  if (typeof content !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(content);
    const text = (parsed as { text?: unknown } | null)?.text;
    return typeof text === 'string' ? text : undefined;
  } catch {
    return undefined;
  }
}

export function createFakeFeishuComments(options: { tokenInvalid: () => Answer }): FakeFeishuComments {
  const comments: FakeFeishuComment[] = [];
  let faults: CommentFault[] = [];
  let posts = 0;
  let lists = 0;

  const add = (instanceId: string, content: string, text: string, commentator: string, extra?: string) => {
    const comment: FakeFeishuComment = {
      id: String(7_000_000_000_000_000_000n + BigInt(`0x${randomBytes(6).toString('hex')}`)),
      instanceId,
      content,
      text,
      commentator,
      extra,
      createdAt: Date.now(),
    };
    comments.push(comment);
    return comment;
  };

  const post = (instanceId: string, url: URL, body: unknown): Answer => {
    const at = faults.findIndex((scripted) => scripted.instanceId === undefined || scripted.instanceId === instanceId);
    const fault = at >= 0 ? faults.splice(at, 1)[0] : undefined;
    if (fault?.kind === 'status') {
      return refused(fault.status, fault.code ?? (fault.status === 429 ? 99991400 : fault.status), 'scripted failure');
    }
    const userId = url.searchParams.get('user_id');
    if (!userId) return refused(400, FEISHU_INVALID_PARAMETER, 'user_id is required');
    const request = (body ?? {}) as { content?: unknown; extra?: unknown };
    const text = textOf(request.content);
    if (text === undefined) return refused(400, FEISHU_INVALID_PARAMETER, 'content must be a JSON string with text');
    const comment = add(
      instanceId,
      request.content as string,
      text,
      userId,
      typeof request.extra === 'string' ? request.extra : undefined,
    );
    return {
      status: 200,
      body: { code: 0, msg: 'success', data: { comment_id: comment.id } },
      ...(fault?.kind === 'answer-after' ? { delayMs: fault.ms } : {}),
    };
  };

  const list = (instanceId: string, url: URL): Answer => {
    if (!url.searchParams.get('user_id')) return refused(400, FEISHU_INVALID_PARAMETER, 'user_id is required');
    const size = Math.min(MAX_PAGE_SIZE, Number(url.searchParams.get('page_size') ?? PAGE_SIZE) || PAGE_SIZE);
    const from = Number(url.searchParams.get('page_token') ?? '0') || 0;
    const on = comments.filter((comment) => comment.instanceId === instanceId);
    const page = on.slice(from, from + size);
    const hasMore = from + size < on.length;
    return {
      status: 200,
      body: {
        code: 0,
        msg: 'success',
        data: {
          comments: page.map((comment) => ({
            id: comment.id,
            content: comment.content,
            create_time: String(comment.createdAt),
            update_time: String(comment.createdAt),
            is_delete: 0,
            commentator: comment.commentator,
            ...(comment.extra === undefined ? {} : { extra: comment.extra }),
          })),
          has_more: hasMore,
          ...(hasMore ? { page_token: String(from + size) } : {}),
        },
      },
    };
  };

  return {
    commentsOn: (instanceId) =>
      comments.filter((comment) => comment.instanceId === instanceId).map((comment) => ({ ...comment })),
    postRequests: () => posts,
    listRequests: () => lists,
    scriptPosts: (scripted) => void (faults = [...scripted]),
    seed: ({ instanceId, text, commentator }) => void add(instanceId, JSON.stringify({ text }), text, commentator),
    answer(method, url, body, request) {
      const match = COMMENTS_PATH.exec(url.pathname);
      if (!match?.[1] || (method !== 'POST' && method !== 'GET')) return undefined;
      if (method === 'POST') posts += 1;
      else lists += 1;
      const authorization = request.headers.authorization ?? '';
      const token = authorization.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined;
      if (!request.tokenValid(token)) return options.tokenInvalid();
      if (url.searchParams.get('user_id_type') !== 'open_id') {
        return refused(400, FEISHU_INVALID_PARAMETER, 'user_id_type must be open_id here');
      }
      const instanceId = decodeURIComponent(match[1]);
      return method === 'POST' ? post(instanceId, url, body) : list(instanceId, url);
    },
  };
}
