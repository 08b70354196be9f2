// Custom search attributes (Keyword), so an operator finds an order in the Temporal UI by approval
// number, key, status or customer without opening its history. Registered at start-up
// (services/temporal/search-attributes.ts); set at workflow start and kept current by the workflows.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const ApprovalNo = defineSearchAttributeKey('ApprovalNo', SearchAttributeType.KEYWORD);
export const IdempotencyKey = defineSearchAttributeKey('IdempotencyKey', SearchAttributeType.KEYWORD);
export const OrderStatus = defineSearchAttributeKey('OrderStatus', SearchAttributeType.KEYWORD);
export const CustomerId = defineSearchAttributeKey('CustomerId', SearchAttributeType.KEYWORD);

export const ALL_SEARCH_ATTRIBUTES = [ApprovalNo, IdempotencyKey, OrderStatus, CustomerId] as const;
