// Decision cards end to end, against the real stack and the fake Feishu and WeCom: a key that waits for a
// person gets one card in the configured chat — however often and however many scans run — with the
// classified cause and its decisions as buttons; a click is a decision through the operator path,
// recorded as `card:feishu:<open id>` or `card:wecom:<user id>`, taken once: a second click, a click after a CLI decision, a
// click on an old episode and a click from someone off the list are each answered without a second
// decision; and the card is redrawn with the outcome, whoever decided.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decisionCardWorkflowId } from '../../domain/decision-cards.js';
import { waitingEpisode } from '../../domain-node/decision-card-keys.js';
import { listOrdersAwaitingDecision } from '../../submission/operator-decisions/awaiting.js';
import { type CardAnswer, type CardClick, decideFromCard } from '../../submission/operator-decisions/cards.js';
import { decideCompensation } from '../../submission/operator-decisions/compensation.js';
import { cliInProcess } from '../../tools/harness/operator-cli.js';
import { keyAwaitingCompensation, scanForDecisionCards } from '../../tools/harness/decision-cards.js';
import { noProductMetrics, type ProductMetrics } from '../../services/metrics/product-metrics.js';
import {
  type FakeFeishu,
  feishuCallback,
  feishuCardClickPayload,
  startFakeFeishu,
} from '../../tools/harness/fake-feishu.js';
import type { FakeFeishuMessage } from '../../tools/harness/fake-feishu-messages.js';
import {
  type FakeWeCom,
  openWeComReply,
  randomWeComAesKey,
  startFakeWeCom,
  wecomCallback,
  wecomCardClickXml,
} from '../../tools/harness/fake-wecom.js';
import { buildApp } from '../../edges/http/app.js';
import { buttonKeyOf } from '../../vendors/decision-cards.js';
import { connectorsFromConfig } from '../../vendors/registry.js';
import {
  eventually,
  exampleMappingFile,
  postVendorCallback,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
} from '../../tools/harness/service.js';

const CHAT = `oc_${randomBytes(16).toString('hex')}`;
const ENCRYPT_KEY = randomBytes(16).toString('hex');
const VERIFICATION_TOKEN = randomBytes(16).toString('hex');
const ALICE = `ou_${randomBytes(8).toString('hex')}`;
const BOB = `ou_${randomBytes(8).toString('hex')}`;
const MALLORY = `ou_${randomBytes(8).toString('hex')}`;
const WECOM_CRYPTO = { token: randomBytes(8).toString('hex'), encodingAesKey: randomWeComAesKey() };
const WECOM_AGENT_ID = 1000017;
const member = (name: string) => `${name}-${randomBytes(3).toString('hex')}`;
const [ZHANGSAN, LISI, WANGWU] = [member('zhangsan'), member('lisi'), member('wangwu')] as const;

describe('decision cards in a Feishu chat and for WeCom members', () => {
  let feishu: FakeFeishu;
  let wecom: FakeWeCom;
  let service: TestService;
  /** What the service counted: `<vendor> <result>` of each card step and each click. */
  const counted = { cards: [] as string[], clicks: [] as string[] };
  const metrics: ProductMetrics = {
    ...noProductMetrics(),
    decisionCardStep: (vendor, step) => counted.cards.push(`${vendor} ${step}`),
    cardClicked: (vendor, result) => counted.clicks.push(`${vendor} ${result}`),
  };

  before(async () => {
    feishu = await startFakeFeishu();
    wecom = await startFakeWeCom();
    service = await startTestService({
      metrics,
      config: testConfig({
        OA_FORM_MAPPING: exampleMappingFile({ feishu: ['PURCHASE-ORDER-APPROVAL'] }),
        FEISHU_APP_ID: feishu.appId,
        FEISHU_APP_SECRET: feishu.appSecret,
        FEISHU_ENCRYPT_KEY: ENCRYPT_KEY,
        FEISHU_VERIFICATION_TOKEN: VERIFICATION_TOKEN,
        FEISHU_API_BASE_URL: feishu.url,
        FEISHU_DECISION_CHAT_ID: CHAT,
        FEISHU_OPERATOR_OPEN_IDS: `${ALICE},${BOB}`,
        DECISION_CARD_LOOK_EVERY_MS: '200',
        // WeCom's cards beside Feishu's: each waiting key gets one in each chat.
        WECOM_CORP_ID: wecom.corpId,
        WECOM_AGENT_SECRET: wecom.agentSecret,
        WECOM_TOKEN: WECOM_CRYPTO.token,
        WECOM_ENCODING_AES_KEY: WECOM_CRYPTO.encodingAesKey,
        WECOM_API_BASE_URL: wecom.url,
        WECOM_AGENT_ID: String(WECOM_AGENT_ID),
        WECOM_DECISION_TO_USERS: `${ZHANGSAN},${LISI},${WANGWU}`,
        WECOM_OPERATOR_USER_IDS: `${ZHANGSAN},${LISI}`,
      }),
    });
  });
  /** The APIs made beside the service's, as a restarting instance is. */
  const restartedApis: Pick<TestService, 'app'>[] = [];
  after(async () => {
    for (const api of restartedApis) await api.app.close();
    await service?.stop();
    await feishu?.close();
    await wecom?.close();
  });

  const compensatingKey = () => keyAwaitingCompensation(service);
  const scan = () => scanForDecisionCards(service);

  const cardsOf = (key: string): FakeFeishuMessage[] =>
    feishu.messages.messagesIn(CHAT).filter((message) => JSON.stringify(message.sentContent).includes(key));

  async function episodeOf(key: string): Promise<string> {
    const [entry] = await listOrdersAwaitingDecision(service.prisma, 10, { idempotencyKey: key });
    assert.ok(entry, `${key} waits`);
    return waitingEpisode(entry.status, entry.waitingSince);
  }

  const operators = new Set([ALICE, BOB]);
  const click = (key: string, episode: string, userId: string, decision: string): Promise<CardAnswer> => {
    const clicked: CardClick = { vendor: 'feishu', userId, idempotencyKey: key, episode, decision };
    return decideFromCard(
      {
        prisma: service.prisma,
        temporal: service.temporal,
        taskQueue: service.config.temporal.taskQueue,
        writePolicy: service.config.writePolicy,
        operators,
      },
      clicked,
    );
  };

  /** The card's text once redrawn: what the chat shows now; else where its workflow stands. */
  async function redrawn(key: string, episode: string): Promise<string> {
    try {
      return await eventually(`the card of ${key} redrawn`, () => {
        const [card] = cardsOf(key);
        return Promise.resolve(card && card.updates > 0 ? JSON.stringify(card.content) : undefined);
      });
    } catch (error) {
      const workflow = await service.temporal.workflow
        .getHandle(decisionCardWorkflowId('feishu', key, episode))
        .describe()
        .catch((cause: unknown) => ({ status: { name: String(cause) }, raw: { pendingActivities: [] } }));
      const pending = (workflow.raw.pendingActivities ?? []).map(
        (activity) => `${activity.activityType?.name} attempt ${activity.attempt}: ${activity.lastFailure?.message}`,
      );
      throw new Error(
        `${(error as Error).message}; its workflow is ${workflow.status.name}, pending ${pending.join('; ') || 'nothing'}; ` +
          `cards ${JSON.stringify(cardsOf(key).map((card) => card.updates))}, PATCHes ${feishu.messages.patchRequests()}`,
      );
    }
  }

  it('posts one card per waiting key however many scans run, with the classified cause and a button per decision', async () => {
    const key = await compensatingKey();
    await Promise.all([scan(), scan(), scan()]);
    await scan();
    const cards = await eventually(`a card for ${key}`, () =>
      Promise.resolve(cardsOf(key).length > 0 ? cardsOf(key) : undefined),
    );
    assert.equal(cards.length, 1, 'one card');
    const text = JSON.stringify(cards[0]?.sentContent);
    assert.match(text, /insufficient-stock/, 'the public code');
    assert.doesNotMatch(text, /InsufficientStock:/, 'never the recorded error');
    for (const decision of ['resubmit', 'abandon']) assert.match(text, new RegExp(`"decision":"${decision}"`));
    assert.equal(cardsOf(key).length, 1, 'still one after the scans');
    // Each successful post is counted; no post of this test is retried, so one per card in the chat.
    await eventually('every card in the chat counted as sent', () =>
      Promise.resolve(
        counted.cards.filter((entry) => entry === 'feishu sent').length === feishu.messages.messagesIn(CHAT).length
          ? true
          : undefined,
      ),
    );
  });

  it('a click from someone off the list decides nothing; an operator’s decides once, recorded as the card’s; a second click is told who decided', async () => {
    const key = await compensatingKey();
    await scan();
    const episode = await episodeOf(key);
    assert.deepEqual(await click(key, episode, MALLORY, 'abandon'), { kind: 'not an operator' });
    assert.equal(
      (await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } }))?.status,
      'COMPENSATING',
    );

    const first = await click(key, episode, ALICE, 'abandon');
    assert.equal(first.kind, 'decided');
    await statusReaches(service, key, 'COMPENSATED');
    const second = await click(key, episode, BOB, 'resubmit');
    assert.equal(second.kind, 'already decided');
    assert.deepEqual(second.kind === 'already decided' && [second.outcome.decision, second.outcome.decidedBy], [
      'abandon',
      `card:feishu:${ALICE}`,
    ]);
    // The same click again (a redelivery) is answered the same, and nothing is decided again.
    const again = await click(key, episode, ALICE, 'abandon');
    assert.equal(again.kind, 'already decided');
    const decisions = await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } });
    assert.deepEqual(
      decisions.map((record) => [record.decision, record.decidedBy]),
      [['abandon', `card:feishu:${ALICE}`]],
    );
    const text = await redrawn(key, episode);
    assert.match(text, new RegExp(`card:feishu:${ALICE}`));
    assert.doesNotMatch(text, /"decision":"resubmit"/, 'no buttons once decided');
    // Its workflow ends with the outcome it drew.
    const card = service.temporal.workflow.getHandle(decisionCardWorkflowId('feishu', key, episode));
    assert.equal(
      ((await card.result()) as { outcome: { decidedBy?: string } }).outcome.decidedBy,
      `card:feishu:${ALICE}`,
    );
  });

  it('a decision taken by the CLI first: the click is told so, and the card is redrawn with the CLI’s name', async () => {
    const key = await compensatingKey();
    await scan();
    const episode = await episodeOf(key);
    await decideCompensation(service.temporal, { idempotencyKey: key, decision: 'abandon', decidedBy: 'cli:carol' });
    const answer = await click(key, episode, ALICE, 'resubmit');
    assert.equal(answer.kind, 'already decided');
    assert.equal(answer.kind === 'already decided' && answer.outcome.decidedBy, 'cli:carol');
    assert.match(await redrawn(key, episode), /cli:carol/);
  });

  it('a Feishu click and an operator’s CLI command at the same moment: one decision stands, the other is told', async () => {
    const key = await compensatingKey();
    const episode = await episodeOf(key);
    const [clicked, command] = await Promise.all([
      clickThroughTheDoor({ idempotencyKey: key, episode, decision: 'abandon' }, ALICE),
      cliInProcess(service, ['abandon', key, '--by', 'carol']),
    ]);
    await statusReaches(service, key, 'COMPENSATED');
    const decided = (await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } }))
      .map((record) => record.decidedBy)
      .filter((by) => by !== null);
    assert.equal(decided.length, 1, `one decision recorded: ${decided.join(', ')}`);
    const toast = clicked.json<{ toast: { content: string } }>().toast.content;
    if (decided[0] === 'carol') {
      // Told who decided; or, when its answer was due before the race settled, that it is under way
      // (the card is then redrawn with carol's decision, as the test above shows for any CLI decision).
      assert.match(
        toast,
        /Already decided: abandon by carol|Deciding: the card shows the outcome/,
        `the click is told who decided: ${toast}`,
      );
    } else {
      assert.equal(decided[0], `card:feishu:${ALICE}`);
      assert.notEqual(command.code, 0, `the CLI is told it came second: ${command.stdout}${command.stderr}`);
    }
  });

  it('a click on an old card does not decide the key’s next wait, and a decision it does not offer is refused', async () => {
    const key = await compensatingKey();
    const episode = await episodeOf(key);
    assert.deepEqual(await click(key, episode, ALICE, 'redeliver'), {
      kind: 'not offered',
      reason: 'redeliver is not a decision for COMPENSATING',
    });
    // An episode this key never waited in, as a card of an earlier wait names it.
    const old = waitingEpisode('COMPENSATING', '2026-01-01T00:00:00.000Z');
    const answer = await click(key, old, ALICE, 'abandon');
    assert.equal(answer.kind, 'already decided', 'the old wait is over');
    assert.equal(
      (await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } }))?.status,
      'COMPENSATING',
    );
  });

  /** The clicks sent through the door that its signature lets in: each is counted once it settles. */
  let doorClicks = 0;
  /** Waits until every click let in so far is counted (a decision may settle after its answer). */
  const everyClickCounted = () =>
    eventually('every click counted', () => Promise.resolve(counted.clicks.length >= doorClicks ? true : undefined));

  /** A click as Feishu's callback brings it: `card.action.trigger`, encrypted and signed (`key`: another one forges it). */
  /** A click on a Feishu card as its callback brings it, to `api` (the service's by default; counted when it reaches the card path). */
  const clickThroughTheDoor = (
    button: { idempotencyKey: string; episode: string; decision: string },
    openId: string,
    key = ENCRYPT_KEY,
    api: Pick<TestService, 'app'> = service,
  ) => {
    if (key === ENCRYPT_KEY && api === service) doorClicks += 1;
    const callback = feishuCallback(
      feishuCardClickPayload({ appId: feishu.appId, openId, button, chatId: CHAT, messageId: 'om_clicked' }),
      { encryptKey: key, token: VERIFICATION_TOKEN, sign: true },
    );
    return postVendorCallback(api, 'feishu', callback);
  };

  it("a click through Feishu's callback is a decision: answered with a toast and the card locked, inside the 3 s", async () => {
    const key = await compensatingKey();
    const episode = await episodeOf(key);
    // Its card posted, so that the decision redraws it.
    await scan();
    await eventually(`a card for ${key}`, () => Promise.resolve(cardsOf(key).length > 0 ? true : undefined));
    const button = { idempotencyKey: key, episode, decision: 'abandon' };

    // A forged click (signed with another key) gets the door's one refusal, and decides nothing.
    const forged = await clickThroughTheDoor(button, ALICE, randomBytes(16).toString('hex'));
    assert.equal(forged.statusCode, 401);
    // Someone off the list: a toast, the card as it is, nothing decided.
    await everyClickCounted();
    const clicksBefore = counted.clicks.length;
    const updatesBefore = counted.cards.filter((entry) => entry === 'feishu updated').length;
    const stranger = await clickThroughTheDoor(button, MALLORY);
    assert.equal(stranger.statusCode, 200);
    const refusal = stranger.json<{ toast: { type: string }; card?: unknown }>();
    assert.deepEqual([refusal.toast.type, refusal.card], ['error', undefined]);
    assert.equal(
      (await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } }))?.status,
      'COMPENSATING',
    );

    const clicked = await clickThroughTheDoor(button, ALICE);
    assert.equal(clicked.statusCode, 200);
    const answer = clicked.json<{ toast: { type: string; content: string }; card: { type: string; data: unknown } }>();
    assert.equal(answer.card.type, 'raw', 'the card is locked');
    assert.doesNotMatch(JSON.stringify(answer.card.data), /"tag":"button"/, 'no button on the locked card');
    await statusReaches(service, key, 'COMPENSATED');
    const decisions = await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } });
    assert.deepEqual(
      decisions.map((record) => record.decidedBy),
      [`card:feishu:${ALICE}`],
    );
    // The same click again (Feishu redelivers what it saw no answer to): told, not decided twice.
    const again = await clickThroughTheDoor(button, BOB);
    assert.match(
      again.json<{ toast: { content: string } }>().toast.content,
      new RegExp(`Already decided: abandon by card:feishu:${ALICE}`),
    );
    // The forged click never reached the card path; each of the three others is counted as it ended.
    await everyClickCounted();
    // In any order: a decision carried out after its answer is counted when it ends.
    assert.deepEqual(counted.clicks.slice(clicksBefore).sort(), [
      'feishu already_decided',
      'feishu decided',
      'feishu not_operator',
    ]);
    assert.match(await redrawn(key, episode), new RegExp(`card:feishu:${ALICE}`), 'its card redrawn');
    await eventually('the redraw counted', () =>
      Promise.resolve(
        counted.cards.filter((entry) => entry === 'feishu updated').length > updatesBefore ? true : undefined,
      ),
    );
  });
  /** A click on a WeCom card as its callback brings it: `template_card_event`, encrypted and signed (`token`: another one forges it). */
  const wecomClick = (
    button: { idempotencyKey: string; episode: string; decision: string },
    userId: string,
    token = WECOM_CRYPTO.token,
    api: Pick<TestService, 'app'> = service,
  ) => {
    if (token === WECOM_CRYPTO.token && api === service) doorClicks += 1;
    const taskId = wecom.cards().find((sent) => JSON.stringify(sent.card).includes(button.idempotencyKey))?.taskId;
    assert.ok(taskId, `a WeCom card for ${button.idempotencyKey}`);
    const xml = wecomCardClickXml({
      corpId: wecom.corpId,
      userId,
      eventKey: buttonKeyOf(button, button.decision),
      taskId,
      responseCode: wecom.responseCodeForClick(taskId),
      agentId: WECOM_AGENT_ID,
    });
    lastWeComClick = wecomCallback(xml, { ...WECOM_CRYPTO, token, corpId: wecom.corpId });
    return postVendorCallback(api, 'wecom', lastWeComClick);
  };
  let lastWeComClick: ReturnType<typeof wecomCallback> | undefined;
  /** What the clicker's buttons read after the reply: its encrypted `update_button`, opened. */
  const replacedWith = (body: string | undefined) => {
    const plaintext = openWeComReply(body ?? '', { ...WECOM_CRYPTO, corpId: wecom.corpId });
    assert.match(plaintext, /<MsgType><!\[CDATA\[update_button\]\]><\/MsgType>/);
    return /<ReplaceName><!\[CDATA\[(.*)\]\]><\/ReplaceName>/.exec(plaintext)?.[1];
  };

  it("a click through WeCom's callback is a decision: the clicker's buttons replaced by the answer, every member's once decided", async () => {
    const key = await compensatingKey();
    const episode = await episodeOf(key);
    await scan();
    await eventually(`a WeCom card for ${key}`, () =>
      Promise.resolve(wecom.cards().some((sent) => JSON.stringify(sent.card).includes(key)) ? true : undefined),
    );
    const button = { idempotencyKey: key, episode, decision: 'abandon' };

    // A forged click (signed with another token) gets the door's one refusal, and decides nothing.
    const forged = await wecomClick(button, ZHANGSAN, 'another-token');
    assert.equal(forged.statusCode, 401);
    await everyClickCounted();
    const clicksBefore = counted.clicks.length;
    // A member not on the operators' list: the buttons stay as they are, nothing decided.
    const stranger = await wecomClick(button, WANGWU);
    assert.deepEqual([stranger.statusCode, stranger.body], [200, '']);
    assert.equal(
      (await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } }))?.status,
      'COMPENSATING',
    );

    const clicked = await wecomClick(button, ZHANGSAN);
    const firstClick = lastWeComClick as ReturnType<typeof wecomCallback>;
    assert.equal(clicked.statusCode, 200);
    // Decided inside the 5 s: the clicker's buttons read the outcome. Still under way then (a slow
    // machine): an empty reply, and the redraw below shows the outcome to everyone.
    if (clicked.body !== '') assert.equal(replacedWith(clicked.body), `abandon by ${ZHANGSAN}`);
    await statusReaches(service, key, 'COMPENSATED');
    const decisions = await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } });
    assert.deepEqual(
      decisions.map((record) => record.decidedBy),
      [`card:wecom:${ZHANGSAN}`],
    );
    // Another operator's click: told on their copy, not decided twice.
    const again = await wecomClick({ ...button, decision: 'resubmit' }, LISI);
    assert.equal(replacedWith(again.body), `abandon by ${ZHANGSAN}`);
    // WeCom resending the first click, byte for byte: answered the same, not decided twice.
    const resent = await postVendorCallback(service, 'wecom', firstClick);
    doorClicks += 1;
    assert.equal(replacedWith(resent.body), `abandon by ${ZHANGSAN}`);
    await everyClickCounted();
    assert.deepEqual(counted.clicks.slice(clicksBefore).sort(), [
      'wecom already_decided',
      'wecom already_decided',
      'wecom decided',
      'wecom not_operator',
    ]);
    assert.equal((await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } })).length, 1);
    // Every member's copy redrawn with the outcome, with the send's response code.
    const redrawn = await eventually(`the WeCom card of ${key} redrawn`, () =>
      Promise.resolve(wecom.cards().find((sent) => JSON.stringify(sent.card).includes(key) && sent.updates > 0)),
    );
    assert.equal(redrawn.replacedFor.all, `abandon by ${ZHANGSAN}`);
    assert.equal(wecom.cards().filter((sent) => JSON.stringify(sent.card).includes(key)).length, 1, 'one card');
  });

  /** A second API on the service's clients, as a restarting instance is: draining from its first request, or (`drains: false`) one whose drain lets every request through. */
  async function restartingApi(drains: boolean): Promise<Pick<TestService, 'app'>> {
    const app = buildApp({
      config: service.config,
      prisma: service.prisma,
      temporal: service.temporal,
      connectors: connectorsFromConfig(service.config),
      ...(drains ? { draining: () => true } : {}),
    });
    await app.ready();
    restartedApis.push({ app });
    return { app };
  }

  /** A key waiting in compensation whose Feishu and WeCom cards were sent, with its card's abandon button. */
  async function keyWithCards() {
    const key = await compensatingKey();
    const button = { idempotencyKey: key, episode: await episodeOf(key), decision: 'abandon' };
    await scan();
    await eventually(`both cards for ${key}`, () =>
      Promise.resolve(
        cardsOf(key).length > 0 && wecom.cards().some((sent) => JSON.stringify(sent.card).includes(key))
          ? true
          : undefined,
      ),
    );
    return button;
  }

  /**
   * Clicks `button` through both HTTP doors of `api` while it restarts: what went wrong, or nothing
   * when each door answered 503 with Retry-After (the vendor, or the clicker, tries again) and no
   * decision was taken.
   */
  async function clickWhileRestarting(
    api: Pick<TestService, 'app'>,
    button: { idempotencyKey: string; episode: string; decision: string },
  ) {
    const answers = {
      feishu: await clickThroughTheDoor(button, ALICE, ENCRYPT_KEY, api),
      wecom: await wecomClick(button, ZHANGSAN, WECOM_CRYPTO.token, api),
    };
    const problems = Object.entries(answers)
      .filter(([, answer]) => answer.statusCode !== 503 || answer.headers['retry-after'] === undefined)
      .map(([vendor, answer]) => `${vendor}'s click answered ${answer.statusCode}`);
    // The key's compensation record names who decided, once someone did.
    const records = () =>
      service.prisma.compensationRecord.findMany({
        where: { idempotentKey: button.idempotencyKey, decidedBy: { not: null } },
      });
    // A door that answered 503 started nothing; one that let a click through took it, now or soon.
    const taken =
      problems.length === 0
        ? await records()
        : await eventually('the decision the click took', async () => {
            const found = await records();
            return found.length > 0 ? found : undefined;
          });
    if (taken.length > 0)
      problems.push(`taken while restarting: ${taken.map((record) => record.decidedBy).join(', ')}`);
    return problems;
  }

  it('a click while the API restarts: each HTTP door answers 503 with Retry-After and takes nothing; the API back takes one click, once', async () => {
    const button = await keyWithCards();
    assert.deepEqual(await clickWhileRestarting(await restartingApi(true), button), []);
    assert.equal(
      (await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: button.idempotencyKey } }))?.status,
      'COMPENSATING',
    );

    // The clicker tries again once the API is back: one decision, and the other door is told it.
    const taken = await clickThroughTheDoor(button, ALICE);
    assert.equal(taken.statusCode, 200);
    await statusReaches(service, button.idempotencyKey, 'COMPENSATED');
    const told = await wecomClick(button, ZHANGSAN);
    assert.match(replacedWith(told.body) ?? '', /^abandon by /);
    const decisions = await service.prisma.compensationRecord.findMany({
      where: { idempotentKey: button.idempotencyKey },
    });
    assert.deepEqual(
      decisions.map((record) => record.decidedBy),
      [`card:feishu:${ALICE}`],
    );
    await everyClickCounted();
  });

  it('the same check catches an API whose drain lets the callbacks through: the click is taken while it restarts', async () => {
    const button = await keyWithCards();
    const problems = await clickWhileRestarting(await restartingApi(false), button);
    assert.ok(
      problems.some((problem) => problem.startsWith('taken while restarting')),
      problems.join('; ') || 'nothing found',
    );
  });
});
