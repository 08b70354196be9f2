// `GET /openapi.json`: the contract of every route, built from the schemas the handlers use
// (edges/http/openapi.ts).
import type { FastifyInstance } from 'fastify';
import { openApiDocument, OPENAPI_PATH } from '../openapi.js';

export function registerOpenApiRoute(app: FastifyInstance): void {
  const contract = openApiDocument();
  app.get(OPENAPI_PATH, (_request, reply) => reply.send(contract));
}
