import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { API_TAG } from '../http/openapi-document.js';
import { problemResponses, REQUEST_ID_HEADER } from '../http/openapi-schemas.js';

const TokenResponse = Type.Object(
  {
    managed_token: Type.String({ description: 'Send this as the Authorization header of background requests.' }),
    token_type: Type.Literal('managed'),
    expires_in: Type.Integer({ description: 'Seconds until the managed token expires.' }),
    expires_at: Type.String({ format: 'date-time' }),
  },
  // Only the OpenAPI description reads it (@fastify/swagger's response headers).
  { headers: REQUEST_ID_HEADER },
);

/** The token flow: a user token's Token ID (header `token`) for a managed token. */
export const authTokenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/api/v1/auth/token',
    {
      schema: {
        summary: 'Exchange a user token for a managed token',
        tags: [API_TAG.tokens],
        headers: Type.Object({ token: Type.Optional(Type.String({ description: 'The Token ID of a user token.' })) }),
        response: { 200: TokenResponse, ...problemResponses([401, 500]) },
      },
    },
    async (request) => {
      const tokenId = request.headers.token;
      const grant = await app.tokens.exchange(Array.isArray(tokenId) ? tokenId[0] : tokenId);
      return {
        managed_token: grant.managedToken,
        token_type: 'managed' as const,
        expires_in: grant.expiresIn,
        expires_at: grant.expiresAt.toISOString(),
      };
    },
  );
};
