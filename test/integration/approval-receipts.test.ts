// The approver sees the order: once a Feishu or DingTalk approval's order is written, its instance
// gets one comment with the order number (a WeCom applicant, one message) — however often the scan runs and the approval event is
// redelivered, and also when an earlier attempt posted it and its record was never written (a
// worker killed between the two). A receipt Feishu refuses for good is recorded as failed, listed
// by `orders-cli receipts` and counted, and the order is untouched. Against the real stack and the
// fake Feishu's approval comments.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { receiptText } from '../../domain/approval-receipts.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { receiptOf } from '../../services/db/approval-receipts.js';
import { noProductMetrics, type ProductMetrics } from '../../services/metrics/product-metrics.js';
import { approvalReceiptScanWorkflow } from '../../workflows/approval-receipt-workflows.js';
import { FEISHU_INSTANCE_NOT_FOUND } from '../../tools/harness/fake-feishu-comments.js';
import {
  approvedDingTalkOrder,
  dingtalkApprovalPayload,
  dingtalkCallback,
  type FakeDingTalk,
  randomDingTalkAesKey,
  startFakeDingTalk,
} from '../../tools/harness/fake-dingtalk.js';
import {
  approvedFeishuOrder,
  type FakeFeishu,
  feishuApprovalPayload,
  feishuCallback,
  startFakeFeishu,
} from '../../tools/harness/fake-feishu.js';
import { cliInProcess } from '../../tools/harness/operator-cli.js';
import {
  approvedWeComOrder,
  type FakeWeCom,
  randomWeComAesKey,
  startFakeWeCom,
  wecomApprovalXml,
  wecomCallback,
} from '../../tools/harness/fake-wecom.js';
import {
  createSku,
  eventually,
  exampleMappingFile,
  orderCount,
  postVendorCallback,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const ENCRYPT_KEY = randomBytes(16).toString('hex');
const VERIFICATION_TOKEN = randomBytes(16).toString('hex');
const PURCHASE = 'PURCHASE-ORDER-APPROVAL';
const RECEIPTS_BY = `ou_${randomBytes(8).toString('hex')}`;
const DINGTALK_AES_KEY = randomDingTalkAesKey();
const DINGTALK_TOKEN = randomBytes(8).toString('hex');
const DINGTALK_RECEIPTS_BY = `receipts${randomBytes(4).toString('hex')}`;
const WECOM_TOKEN = randomBytes(8).toString('hex');
const WECOM_ENCODING_AES_KEY = randomWeComAesKey();
const WECOM_AGENT_ID = 1000017;

describe('receipts: the order number written back into its Feishu, DingTalk and WeCom approvals', () => {
  let feishu: FakeFeishu;
  let dingtalk: FakeDingTalk;
  let wecom: FakeWeCom;
  let service: TestService;
  const counted: string[] = [];
  const metrics: ProductMetrics = {
    ...noProductMetrics(),
    receiptSettled: (vendor, result) => counted.push(`${vendor} ${result}`),
  };

  before(async () => {
    feishu = await startFakeFeishu();
    dingtalk = await startFakeDingTalk();
    wecom = await startFakeWeCom();
    service = await startTestService({
      metrics,
      config: testConfig({
        OA_FORM_MAPPING: exampleMappingFile({ feishu: [PURCHASE], wecom: ['TEMPLATE-FAKE'] }),
        FEISHU_APP_ID: feishu.appId,
        FEISHU_APP_SECRET: feishu.appSecret,
        FEISHU_ENCRYPT_KEY: ENCRYPT_KEY,
        FEISHU_VERIFICATION_TOKEN: VERIFICATION_TOKEN,
        FEISHU_API_BASE_URL: feishu.url,
        FEISHU_RECEIPT_USER_ID: RECEIPTS_BY,
        DINGTALK_APP_KEY: dingtalk.appKey,
        DINGTALK_APP_SECRET: dingtalk.appSecret,
        DINGTALK_AES_KEY,
        DINGTALK_TOKEN,
        DINGTALK_API_BASE_URL: dingtalk.url,
        DINGTALK_RECEIPT_USER_ID: DINGTALK_RECEIPTS_BY,
        WECOM_CORP_ID: wecom.corpId,
        WECOM_AGENT_SECRET: wecom.agentSecret,
        WECOM_TOKEN,
        WECOM_ENCODING_AES_KEY,
        WECOM_API_BASE_URL: wecom.url,
        WECOM_RECEIPTS: 'on',
        WECOM_AGENT_ID: String(WECOM_AGENT_ID),
      }),
    });
  });
  after(async () => {
    await service?.stop();
    await feishu?.close();
    await dingtalk?.close();
    await wecom?.close();
  });

  /** Feishu's approval event for `instanceCode`, signed, through the callback door. */
  const deliver = async (instanceCode: string) => {
    const callback = feishuCallback(
      feishuApprovalPayload({ instanceCode, status: 'APPROVED', approvalCode: PURCHASE, uuid: `ev-${instanceCode}` }),
      { encryptKey: ENCRYPT_KEY, token: VERIFICATION_TOKEN, sign: true },
    );
    const answer = await postVendorCallback(service, 'feishu', callback);
    assert.equal(answer.statusCode, 200, answer.body);
  };

  /** An approved instance whose order is written; its key and order number. */
  async function writtenApproval(): Promise<{ instance: string; key: string; orderNo: string }> {
    const instance = uniqueApprovalNo('RCPT');
    feishu.register(instance, approvedFeishuOrder(await createSku(service.prisma, 100), 2, 10.5));
    await deliver(instance);
    const key = idempotencyKeyFor(instance, 'MAIN');
    await statusReaches(service, key, 'SUBMITTED');
    const order = await service.prisma.orderMain.findUnique({ where: { idempotentKey: key } });
    assert.ok(order, `the order of ${key}`);
    return { instance, key, orderNo: order.orderNo };
  }

  const scan = () =>
    service.temporal.workflow.execute(approvalReceiptScanWorkflow, {
      taskQueue: service.config.temporal.taskQueue,
      workflowId: `receipt-scan-${randomBytes(4).toString('hex')}`,
    });

  const settled = (key: string) => eventually(`the receipt of ${key} settled`, () => receiptOf(service.prisma, key));

  it('comments the order number on its approval once, however often the scan runs and the event comes again', async () => {
    const { instance, key, orderNo } = await writtenApproval();
    await Promise.all([scan(), scan(), scan()]);
    const receipt = await settled(key);
    assert.equal(receipt.status, 'POSTED');
    await deliver(instance);
    await scan();
    const comments = feishu.comments.commentsOn(instance);
    assert.equal(comments.length, 1, 'one comment');
    assert.equal(comments[0]?.text, receiptText({ idempotencyKey: key, orderNo }));
    assert.match(comments[0]?.text ?? '', new RegExp(orderNo));
    assert.equal(comments[0]?.commentator, RECEIPTS_BY, 'posted as FEISHU_RECEIPT_USER_ID');
    assert.equal(receipt.status === 'POSTED' && receipt.postedId, comments[0]?.id, 'the comment recorded');
    assert.deepEqual(counted, ['feishu posted'], 'counted once');
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('a receipt posted before its record was written (the worker killed between) is found, not posted again', async () => {
    const { instance, key, orderNo } = await writtenApproval();
    // What an attempt that died after its post left: the comment, and no record.
    feishu.comments.seed({
      instanceId: instance,
      text: receiptText({ idempotencyKey: key, orderNo }),
      commentator: RECEIPTS_BY,
    });
    const postsBefore = feishu.comments.postRequests();
    await scan();
    const receipt = await settled(key);
    assert.equal(receipt.status, 'POSTED');
    assert.equal(feishu.comments.commentsOn(instance).length, 1, 'still one comment');
    assert.equal(feishu.comments.postRequests(), postsBefore, 'no post for it');
  });

  it('a receipt Feishu refuses for good is recorded failed, listed and counted; the order stays as it is', async () => {
    const countedBefore = counted.filter((entry) => entry === 'feishu failed').length;
    feishu.comments.scriptPosts([{ kind: 'status', status: 400, code: FEISHU_INSTANCE_NOT_FOUND }]);
    const { instance, key, orderNo } = await writtenApproval();
    await scan();
    const receipt = await settled(key);
    assert.equal(receipt.status, 'FAILED');
    assert.match(receipt.status === 'FAILED' ? receipt.failure : '', /^OaApiRefused: /);
    assert.equal(feishu.comments.commentsOn(instance).length, 0);
    assert.equal(counted.filter((entry) => entry === 'feishu failed').length, countedBefore + 1);
    const listed = await cliInProcess(service, ['receipts', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const { failed } = JSON.parse(listed.stdout) as {
      failed: { idempotencyKey: string; orderNo: string; cause: string }[];
    };
    assert.deepEqual(
      failed.filter((entry) => entry.idempotencyKey === key).map((entry) => [entry.orderNo, entry.cause]),
      [[orderNo, 'oa-refused']],
    );
    // The order is written and stays so; a later scan leaves the settled receipt alone.
    await scan();
    assert.equal(feishu.comments.commentsOn(instance).length, 0);
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.equal(
      (await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } }))?.status,
      'SUBMITTED',
    );
  });

  /** DingTalk's approval event for `processInstanceId`, through its callback door, answered 200. */
  const deliverDingTalk = async (processInstanceId: string) => {
    const callback = dingtalkCallback(
      dingtalkApprovalPayload({
        processInstanceId,
        type: 'finish',
        result: 'agree',
        eventId: `ev-${processInstanceId}`,
      }),
      { aesKey: DINGTALK_AES_KEY, token: DINGTALK_TOKEN, appKey: dingtalk.appKey },
    );
    const answer = await postVendorCallback(service, 'dingtalk', callback);
    assert.equal(answer.statusCode, 200, answer.body);
  };

  async function writtenDingTalkApproval(): Promise<{ instance: string; key: string; orderNo: string }> {
    const instance = uniqueApprovalNo('RCPTDT');
    dingtalk.register(instance, approvedDingTalkOrder(await createSku(service.prisma, 100), 2, 10.5, 'CUST-DT-R'));
    await deliverDingTalk(instance);
    const key = idempotencyKeyFor(instance, 'MAIN');
    await statusReaches(service, key, 'SUBMITTED');
    const order = await service.prisma.orderMain.findUnique({ where: { idempotentKey: key } });
    assert.ok(order, `the order of ${key}`);
    return { instance, key, orderNo: order.orderNo };
  }

  it('DingTalk: comments the order number on its approval once, as DINGTALK_RECEIPT_USER_ID, however often the scan runs', async () => {
    const { instance, key, orderNo } = await writtenDingTalkApproval();
    await Promise.all([scan(), scan()]);
    assert.equal((await settled(key)).status, 'POSTED');
    await deliverDingTalk(instance);
    await scan();
    assert.deepEqual(dingtalk.commentsOn(instance), [
      { text: receiptText({ idempotencyKey: key, orderNo }), userId: DINGTALK_RECEIPTS_BY },
    ]);
  });

  it('DingTalk: a receipt already among the instance’s operation records is found, not posted again', async () => {
    const instance = uniqueApprovalNo('RCPTDT');
    const key = idempotencyKeyFor(instance, 'MAIN');
    const order = approvedDingTalkOrder(await createSku(service.prisma, 100), 2, 10.5, 'CUST-DT-R');
    dingtalk.register(instance, order);
    await deliverDingTalk(instance);
    await statusReaches(service, key, 'SUBMITTED');
    const written = await service.prisma.orderMain.findUnique({ where: { idempotentKey: key } });
    assert.ok(written);
    // What an attempt that died after its post left: the comment on the instance, and no record.
    order.comments = [
      { text: receiptText({ idempotencyKey: key, orderNo: written.orderNo }), userId: DINGTALK_RECEIPTS_BY },
    ];
    const postsBefore = dingtalk.commentPosts();
    await scan();
    assert.equal((await settled(key)).status, 'POSTED');
    assert.equal(dingtalk.commentsOn(instance).length, 1);
    assert.equal(dingtalk.commentPosts(), postsBefore, 'no post for it');
  });

  /** A WeCom approval of `applicant`'s, its event through the callback door, its order written. */
  async function writtenWeComApproval(applicant: string): Promise<{ key: string; orderNo: string }> {
    const spNo = uniqueApprovalNo('RCPTWC');
    wecom.register(spNo, { ...approvedWeComOrder(await createSku(service.prisma, 100), 2, 10.5), applicant });
    const callback = wecomCallback(wecomApprovalXml({ corpId: wecom.corpId, spNo, spStatus: 2 }), {
      token: WECOM_TOKEN,
      encodingAesKey: WECOM_ENCODING_AES_KEY,
      corpId: wecom.corpId,
    });
    const answer = await postVendorCallback(service, 'wecom', callback);
    assert.equal(answer.statusCode, 200, answer.body);
    const key = idempotencyKeyFor(spNo, 'MAIN');
    await statusReaches(service, key, 'SUBMITTED');
    const order = await service.prisma.orderMain.findUnique({ where: { idempotentKey: key } });
    assert.ok(order, `the order of ${key}`);
    return { key, orderNo: order.orderNo };
  }

  it('WeCom: the applicant gets the order number once, as a message from WECOM_AGENT_ID', async () => {
    const applicant = `buyer-${randomBytes(4).toString('hex')}`;
    const { key, orderNo } = await writtenWeComApproval(applicant);
    await Promise.all([scan(), scan()]);
    assert.equal((await settled(key)).status, 'POSTED');
    await scan();
    assert.deepEqual(
      wecom.messagesTo(applicant).map((message) => [message.agentid, message.content]),
      [[WECOM_AGENT_ID, receiptText({ idempotencyKey: key, orderNo })]],
    );
  });

  it('WeCom: a receipt sent before its record was written is held back by WeCom’s duplicate check', async () => {
    const applicant = `buyer-${randomBytes(4).toString('hex')}`;
    const { key, orderNo } = await writtenWeComApproval(applicant);
    // What an attempt that died after its send left: the message, and no record.
    wecom.seedMessage({
      touser: applicant,
      agentid: WECOM_AGENT_ID,
      content: receiptText({ idempotencyKey: key, orderNo }),
    });
    const sendsBefore = wecom.sendRequests();
    await scan();
    assert.equal((await settled(key)).status, 'POSTED');
    assert.equal(wecom.sendRequests(), sendsBefore + 1, 'sent again, as WeCom cannot be asked');
    assert.equal(wecom.messagesTo(applicant).length, 1, 'one message');
  });
});
