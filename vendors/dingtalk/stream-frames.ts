// The frames of DingTalk's Stream protocol, as text on the WebSocket: what DingTalk sends (a
// SYSTEM frame — `ping`, `disconnect`, …; an EVENT frame with the event's type and id in its
// headers and the event itself as JSON text in `data`; a CALLBACK frame of a subscribed topic, a
// decision card's click) and what the client answers (the ping's echo, an event's acknowledgement,
// a callback's response).
// Pure: the connection (stream.ts) reads and writes them.
import type { DWClientDownStream, EventAck } from 'dingtalk-stream';

/** What an event's acknowledgement says: SUCCESS (taken, do not send it again) or LATER (send it again). */
export type StreamAckStatus = `${EventAck}`;

type FrameHeaders = Record<string, string>;

export type DownstreamFrame =
  | { type: 'SYSTEM'; topic: string; headers: FrameHeaders; data: string }
  | {
      type: 'EVENT';
      messageId: string;
      /** `headers.eventType`, e.g. `bpms_instance_change`. */
      eventType: string | undefined;
      /** `headers.eventId`: DingTalk's id of the event, the same on every redelivery. */
      eventId: string | undefined;
      data: string;
    }
  | { type: 'CALLBACK'; messageId: string; topic: string; data: string }
  /** Not a frame of the protocol; `reason` is for the log and never repeats the text. */
  | { type: 'invalid'; reason: string };

/** The header names DingTalk's own client reads (its `DWClientDownStream`). */
type KnownHeader = keyof DWClientDownStream['headers'];
const header = (headers: FrameHeaders, name: KnownHeader): string | undefined => {
  const value = headers[name];
  return value === undefined || value === '' ? undefined : value;
};

/** A frame's messageId as DingTalk gives it: short, of letters, digits and a few marks. */
const MESSAGE_ID_FORM = /^[A-Za-z0-9._:-]{1,128}$/;

/** Reads one text frame; anything that is not a frame of the protocol is `invalid`, never thrown. */
export function parseDownstreamFrame(text: string): DownstreamFrame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { type: 'invalid', reason: 'not JSON' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { type: 'invalid', reason: 'not a JSON object' };
  }
  const frame = value as Record<string, unknown>;
  const rawHeaders = frame.headers;
  if (rawHeaders === null || typeof rawHeaders !== 'object' || Array.isArray(rawHeaders)) {
    return { type: 'invalid', reason: 'no headers' };
  }
  // Header values are strings in the protocol; a number DingTalk may send for a time is kept as text.
  const headers: FrameHeaders = {};
  for (const [name, headerValue] of Object.entries(rawHeaders as Record<string, unknown>)) {
    if (typeof headerValue === 'string') headers[name] = headerValue;
    else if (typeof headerValue === 'number' && Number.isFinite(headerValue)) headers[name] = String(headerValue);
  }
  const data = typeof frame.data === 'string' ? frame.data : '';
  // A frame's id goes into its answer and the log: one of a length and form DingTalk's are, or none.
  const named = header(headers, 'messageId');
  const messageId = named !== undefined && MESSAGE_ID_FORM.test(named) ? named : undefined;
  switch (frame.type) {
    case 'SYSTEM':
      return { type: 'SYSTEM', topic: header(headers, 'topic') ?? '', headers, data };
    case 'EVENT':
      if (!messageId) return { type: 'invalid', reason: 'an EVENT frame without a messageId of its form' };
      return {
        type: 'EVENT',
        messageId,
        eventType: header(headers, 'eventType'),
        eventId: header(headers, 'eventId'),
        data,
      };
    case 'CALLBACK':
      if (!messageId) return { type: 'invalid', reason: 'a CALLBACK frame without a messageId of its form' };
      return { type: 'CALLBACK', messageId, topic: header(headers, 'topic') ?? '', data };
    default:
      return { type: 'invalid', reason: 'an unknown frame type' };
  }
}

/** The acknowledgement of an EVENT frame: its messageId, and in `data` the status DingTalk acts on. */
export function eventAck(messageId: string, status: StreamAckStatus): string {
  return JSON.stringify({
    code: 200,
    headers: { contentType: 'application/json', messageId },
    message: 'OK',
    data: JSON.stringify({ status, message: status === 'SUCCESS' ? 'success' : 'later' }),
  });
}

/** The answer to a CALLBACK frame: its messageId, and in `data` the `response` DingTalk acts on (a card's update). */
export function callbackAnswer(messageId: string, response: unknown): string {
  return JSON.stringify({
    code: 200,
    headers: { contentType: 'application/json', messageId },
    message: 'OK',
    data: JSON.stringify({ response }),
  });
}

/** The answer to a SYSTEM `ping`: its headers and data, echoed. */
export function pingEcho(frame: Extract<DownstreamFrame, { type: 'SYSTEM' }>): string {
  return JSON.stringify({ code: 200, headers: frame.headers, message: 'OK', data: frame.data });
}
