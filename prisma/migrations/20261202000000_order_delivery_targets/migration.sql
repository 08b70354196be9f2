-- The targets the writing worker delivers `order.created` to ('http' for DOWNSTREAM_URL, 'broker'
-- for AMQP_URL), written in the order's own transaction. A delivery an operator asks for after the
-- order workflow has closed reads them here, so it requires every one of them of the worker that
-- runs it instead of sending to whatever that worker happens to have. Orders written before this
-- migration recorded none ('{}'): their delivery goes to the targets of the worker that runs it,
-- as before.
ALTER TABLE "order_main"
    ADD COLUMN "delivery_targets" TEXT[] NOT NULL DEFAULT '{}',
    ADD CONSTRAINT "order_main_delivery_targets" CHECK ("delivery_targets" <@ ARRAY['http', 'broker']::TEXT[]);
