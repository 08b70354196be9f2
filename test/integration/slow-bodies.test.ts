// A stranger who sends headers and most of a body, then nothing, holds a connection and the bytes
// sent so far before any signature is checked. The API as a process of its own, with the heap the
// deployed pod's 512 MiB give Node.js, meets 2,000 such connections from one client address (the
// headers of a 256 KiB webhook body, 200,000 of its bytes, then silence; tools/harness/slow-bodies.ts):
// its RSS stays bounded, every /livez is answered with under 100 ms of the API's work ahead of it, a
// signed approval from another address is accepted, and the API, as the kernel's table lists its
// side, holds no more than the client's share at once and each for no longer than the webhook's body
// time. Then, with slow bodies open again, SIGTERM: the process exits inside the pod's grace period,
// the slow connections closed at the end of the drain instead of at their own time. The broken
// variant, the clocks and caps taken out of the API (docs/security.md#slow-callers), fails on every
// count but /livez and the approval.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { establishedFrom, kernelHex } from '../../tools/harness/listening-sockets.js';
import { processEnv, sendApproval } from '../../tools/harness/processes.js';
import { type ApiProcess, apiProcess } from '../../tools/harness/service-processes.js';
import {
  approval,
  createSku,
  startTestService,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';
import { type SlowConnection, slowBodies, type Stranger } from '../../tools/harness/slow-bodies.js';
import { spreadOf } from '../../tools/harness/stats.js';
import { settlesWithin, sleep } from '../../tools/harness/time.js';

const SLOW_SOCKETS = 2_000;
/** As fast as the API takes them from its accept queue (a flood of connects is the gateway's and the kernel's to meet). */
const WAVE = 25;
/** The stranger's address; the legitimate sender and the probes come from 127.0.0.1 (Linux routes all of 127/8 to lo). */
const STRANGER = '127.0.0.2';
/** The default: the webhook's sender gives up at WEBHOOK_START_TIMEOUT_MS; every other request has HTTP_REQUEST_TIMEOUT_MS. */
const WEBHOOK_BODY_MS = 5_000;
/** Longer than the default, so that a stop that waited for them could not pass for one that closed them. */
const REQUEST_TIMEOUT_MS = 30_000;
const PER_CLIENT = 256;
const DRAIN_MS = 500;
/**
 * The heap Node.js gives itself in the deployed pod: a quarter of the 512 MiB limit, times two on
 * 64-bit (V8's rule from the memory the cgroup allows). The RSS bound below is the pod's limit.
 */
const DEPLOYED_HEAP_MIB = 256;
/**
 * What the slow connections may add to the API's RSS: the 256 of one client the cap keeps, each
 * with 200,000 bytes read, is 49 MiB; the bound leaves as much again for their sockets, parsers and
 * timers. Without the caps and the timeouts the same 2,000 connections added 387 MiB.
 */
const ADDED_RSS_BOUND_MIB = 100;
/** Above this the pod is killed; the review measured 2,000 slow bodies reaching it. */
const POD_LIMIT_MIB = 512;
const LIVEZ_BOUND_MS = 100;
const GRACE_SECONDS = Number(
  /terminationGracePeriodSeconds: (\d+)/.exec(
    readFileSync(new URL('../../deploy/kubernetes/api.yaml', import.meta.url), 'utf8'),
  )?.[1],
);

/** Every connection the stranger opened, once the server has closed them all or `withinMs` has passed. */
async function closedWithin(stranger: Stranger, withinMs: number): Promise<SlowConnection[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const connections = await stranger.report();
    if (connections.every((connection) => connection.closedAt !== undefined) || Date.now() > deadline) {
      return connections;
    }
    await sleep(50);
  }
}

/** The API's resident memory in MiB, as the kernel counts it against the pod's limit. */
function rssMiB(pid: number): number {
  const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) / 1024;
}

/**
 * The watcher, on a thread of its own so that the stranger's work on this one (2,000 connections,
 * 400 MB written) is not counted as the API's: every 50 ms the API's RSS, and GET /livez on a
 * connection of its own as a kubelet probes it — milliseconds to the whole answer, Infinity for none.
 */
const WATCHER = `
const { parentPort, workerData } = require('node:worker_threads');
const { existsSync, readFileSync } = require('node:fs');
const http = require('node:http');
const { port, pid, strangerHex } = workerData;
// The stranger's connections the API holds, as the kernel sees them (/proc/net/tcp, the API's
// side): established, each by its socket's inode, and whether the API has read what arrived (its
// receive queue empty). A connection the API closed is not listed, whenever the stranger gets round
// to noticing.
const portHex = ':' + port.toString(16).toUpperCase().padStart(4, '0');
const strangerConnections = () => readFileSync('/proc/net/tcp', 'utf8').split('\\n').slice(1)
  .map((line) => line.trim().split(/\\s+/))
  .filter(([, local, remote, state]) => local && local.endsWith(portHex) && remote.startsWith(strangerHex) && state === '01')
  .map((fields) => ({ inode: fields[9], read: parseInt(fields[4].split(':')[1], 16) === 0 }));
// The API's main thread, the one its event loop and so every answer runs on: its CPU time, in ms.
const loopCpuMs = () => {
  if (!alive()) return NaN;
  const fields = readFileSync('/proc/' + pid + '/task/' + pid + '/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const alive = () => existsSync('/proc/' + pid + '/status');
const rss = () => !alive() ? 0 : Number(/VmRSS:\\s+(\\d+) kB/.exec(readFileSync('/proc/' + pid + '/status', 'utf8'))[1]) / 1024;
const get = (port, path) => new Promise((resolve) => {
  const started = performance.now();
  const request = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 5000 }, (response) => {
    response.resume();
    response.on('end', () => resolve(response.statusCode === 200 ? performance.now() - started : Infinity));
  });
  request.on('timeout', () => request.destroy());
  request.on('error', () => resolve(Infinity));
});
let running = true;
let peakMiB = rss();
let mostHeld = 0;
// Each connection's first and last sighting, and the longest gap between two samples: a life is
// known to within one gap.
const sighted = new Map();
let lastSampleAt = Date.now();
let longestGapMs = 0;
const sample = () => {
  const now = Date.now();
  longestGapMs = Math.max(longestGapMs, now - lastSampleAt);
  lastSampleAt = now;
  const connections = strangerConnections();
  mostHeld = Math.max(mostHeld, connections.filter((connection) => connection.read).length);
  for (const { inode } of connections) {
    const seen = sighted.get(inode);
    if (seen) seen.last = now;
    else sighted.set(inode, { first: now, last: now });
  }
  peakMiB = Math.max(peakMiB, rss());
};
const probes = [];
parentPort.on('message', () => (running = false));
(async () => {
  while (running) {
    sample();
    const at = Date.now();
    const cpuBefore = loopCpuMs();
    const ms = await get(port, '/livez');
    probes.push({ at, ms, workMs: loopCpuMs() - cpuBefore });
    sample();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const longestHeldMs = Math.max(0, ...[...sighted.values()].map((seen) => seen.last - seen.first));
  parentPort.postMessage({ peakMiB, mostHeld, probes, longestHeldMs, longestGapMs, sighted: sighted.size });
})();
`;

interface Probe {
  at: number;
  /** /livez, in ms. */
  ms: number;
  /**
   * The work the API's event loop did while the probe waited (CPU time of its main thread, in
   * steps of 10 ms): what held the answer back. On a loaded machine the wall clock also counts the
   * time the process was not running at all, which nothing in the API causes.
   */
  workMs: number;
}

interface Watched {
  peakMiB: number;
  /** The most of the stranger's connections the API held at once, their bodies read. */
  mostHeld: number;
  probes: Probe[];
  /** The longest the API held one of the stranger's connections, as sampled. */
  longestHeldMs: number;
  /** The longest gap between two samples: how far `longestHeldMs` may fall short. */
  longestGapMs: number;
  /** How many of the stranger's connections were seen established. */
  sighted: number;
}

/**
 * Samples, until stopped, the API's RSS, /livez, and the stranger's connections as the kernel lists
 * them on the API's side: what the API holds, whenever the stranger hears of a close.
 */
function watch(port: number, pid: number) {
  const strangerHex = `${kernelHex(STRANGER)}:`;
  const watcher = new Worker(WATCHER, { eval: true, workerData: { port, pid, strangerHex } });
  const result = new Promise<Watched>((resolve, reject) => {
    watcher.once('message', resolve);
    watcher.once('error', reject);
  });
  return {
    stop: async () => {
      watcher.postMessage('stop');
      const watched = await result;
      await watcher.terminate();
      return watched;
    },
  };
}

/** Until the API holds none of the stranger's connections to `port`; false if `withinMs` passes first. */
async function allClosedByServer(port: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (establishedFrom(port, STRANGER) > 0) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

describe('slow bodies from a stranger', () => {
  let service: TestService;
  let api: ApiProcess;
  let stranger: Stranger;

  before(async () => {
    // The database and task queue of this file; the API below is the process under test.
    service = await startTestService({ inProcessWorker: false });
    api = await apiProcess({
      name: 'api',
      env: processEnv(service.config, {
        SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
        HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
        MCP_TOKEN: 'slow-bodies-mcp-token-0123',
      }),
      nodeFlags: [`--max-old-space-size=${DEPLOYED_HEAP_MIB}`],
    });
    await api.start();
    stranger = slowBodies();
  });
  after(async () => {
    await stranger.stop();
    await api.kill('SIGKILL');
    await service.stop();
  });

  it('hold neither its memory nor /livez nor a signed approval, and are closed within the webhook’s body time', async () => {
    const pid = api.pid() as number;
    const sku = await createSku(service.prisma, 10);
    // Warm: the first approval compiles the paths a later one takes.
    assert.equal((await sendApproval(api.url, approval(uniqueApprovalNo('SLOWWARM'), sku))).status, 202);
    const rssBefore = rssMiB(pid);
    const watching = watch(api.port, pid);
    const started = Date.now();
    let watched: Watched | undefined;
    let allOpen: number;
    let heldMeanwhile: number;
    let accepted: Awaited<ReturnType<typeof sendApproval>>;
    let closedByServer: boolean;
    try {
      await stranger.open({
        port: api.port,
        path: '/webhooks/oa/approvals',
        count: SLOW_SOCKETS,
        from: STRANGER,
        wave: WAVE,
      });
      allOpen = Date.now();
      // While the API holds its share of the connections.
      heldMeanwhile = establishedFrom(api.port, STRANGER);
      accepted = await sendApproval(api.url, approval(uniqueApprovalNo('SLOWBODY'), sku), { timeoutMs: 10_000 });
      // Waits for the state, however slow the machine; the lives sampled below say whether it came in time.
      closedByServer = await allClosedByServer(api.port, 60_000);
    } finally {
      watched = await watching.stop();
    }
    const allClosed = Date.now();
    const { peakMiB, mostHeld, probes, longestHeldMs, longestGapMs, sighted } = watched;
    // What the stranger heard: a 408 before the close, or nothing.
    const slow = await closedWithin(stranger, 60_000);
    const stillOpen = slow.filter((connection) => connection.closedAt === undefined).length;
    const timedOut = slow.filter((connection) => connection.answer?.startsWith('HTTP/1.1 408 ')).length;
    const closedUnread = slow.filter(
      (connection) => connection.closedAt !== undefined && connection.answer === undefined,
    ).length;
    const livez = spreadOf(probes.map((probe) => probe.ms));
    const mostWork = probes.reduce((most, probe) => (probe.workMs > most.workMs ? probe : most));
    console.log(
      `slow bodies: ${SLOW_SOCKETS} opened from ${STRANGER} in ${allOpen - started} ms; ${timedOut} answered 408 at their ` +
        `body time, ${closedUnread} closed unread by the cap, at most ${mostHeld} held at once (HTTP_MAX_CONNECTIONS_PER_CLIENT ` +
        `${PER_CLIENT}); the API held none ${allClosed - started} ms after the first was opened, none longer than ` +
        `${longestHeldMs} ms (webhook body time ${WEBHOOK_BODY_MS} ms; sampled at most ${longestGapMs} ms apart, ` +
        `${sighted} seen); API RSS ${rssBefore.toFixed(0)} MiB before, ${peakMiB.toFixed(0)} MiB at its peak ` +
        `(heap limit ${DEPLOYED_HEAP_MIB} MiB); /livez over ${livez.count} probes p50 ${livez.p50.toFixed(1)} ms, ` +
        `p99 ${livez.p99.toFixed(1)} ms, max ${livez.max.toFixed(1)} ms, at most ${mostWork.workMs} ms of the API's ` +
        `work ahead of one (${mostWork.at - started} ms in); ` +
        `a signed approval sent with ${heldMeanwhile} of them held: ${accepted.status}`,
    );

    assert.equal(accepted.status, 202, 'a signed approval from another address is accepted meanwhile');
    // The server's side, as the kernel lists it: every slow connection closed by the API, each at
    // its body time, late by what a loaded machine adds to a timer (up to 3.4 s seen with the whole
    // suite beside it) but far from the request time that would otherwise have closed it; never
    // more than the client's share at once (the exact share is the unit test's,
    // test/unit/edges/http/connection-caps.test.ts: sampled from outside, a connection the API has
    // just let go may still be listed).
    assert.ok(closedByServer, `the API still holds ${establishedFrom(api.port, STRANGER)} slow connections`);
    assert.ok(
      longestHeldMs < (WEBHOOK_BODY_MS + REQUEST_TIMEOUT_MS) / 2,
      `the API held a slow connection ${longestHeldMs} ms: not closed at its body time`,
    );
    assert.ok(mostHeld < 2 * PER_CLIENT, `the cap holds one client to its share: ${mostHeld} at once`);
    // The stranger's side, once it has heard of every close: each was answered 408 or closed unread,
    // and some were closed unread, which the cap does only once the client holds its whole share.
    assert.equal(stillOpen, 0, 'the stranger heard of every close');
    assert.equal(timedOut + closedUnread, SLOW_SOCKETS, 'every slow connection is answered 408 or closed unread');
    assert.ok(closedUnread > 0, 'the cap was reached: connections closed unread');
    assert.ok(
      peakMiB - rssBefore < ADDED_RSS_BOUND_MIB && peakMiB < POD_LIMIT_MIB,
      `RSS ${rssBefore.toFixed(0)} → ${peakMiB.toFixed(0)} MiB`,
    );
    assert.ok(livez.count >= 20, `${livez.count} probes of /livez`);
    assert.ok(
      probes.every((probe) => probe.ms !== Infinity),
      'every probe of /livez was answered 200 within 5 s',
    );
    assert.ok(mostWork.workMs < LIVEZ_BOUND_MS, `a /livez waited behind ${mostWork.workMs} ms of the API's work`);
  });

  it('hold not its stop: SIGTERM closes them at the end of the drain and exits inside the grace period', async () => {
    // Under the cap, so that none is closed by it while the API lets the last test's go.
    const held = await stranger.open({
      port: api.port,
      path: '/mcp',
      count: PER_CLIENT / 2,
      from: STRANGER,
      wave: WAVE,
    });
    assert.ok(
      held.every((socket) => socket.closedAt === undefined),
      'the slow bodies are held',
    );
    const signalled = Date.now();
    // What the orchestrator does: SIGTERM, and SIGKILL once the grace period is over.
    const exited = await settlesWithin(api.kill('SIGTERM'), GRACE_SECONDS * 1000);
    const exitedAfterMs = Date.now() - signalled;
    if (!exited) await api.kill('SIGKILL');
    console.log(
      `SIGTERM with ${held.length} slow bodies open (their request time ${REQUEST_TIMEOUT_MS} ms): the process ` +
        `exited after ${exitedAfterMs} ms (drain ${DRAIN_MS} ms, grace period ${GRACE_SECONDS} s)`,
    );
    assert.ok(exited, `still running ${GRACE_SECONDS} s after SIGTERM`);
    assert.deepEqual(api.exit(), { code: 0, signal: null }, api.output().slice(-2_000));
    // Closed by the stop, well before their own time would have let the server close.
    assert.ok(exitedAfterMs < REQUEST_TIMEOUT_MS / 2, `the process exited ${exitedAfterMs} ms after SIGTERM`);
  });
});
