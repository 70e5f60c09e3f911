import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';

/**
 * The groups of the API reference: every operation the OpenAPI document shows carries one of
 * these tags, and `/docs` lists the groups in this order, each with its description.
 *
 * @example app.post('/api/v1/auth/token', { schema: { tags: [API_TAG.tokens], … } }, …)
 */
export const API_TAGS = [
  {
    name: 'removal',
    description:
      'Remove the background of an image given by URL, as Base64 or as an upload. Each takes a managed token in `Authorization` and the same output options, and answers `{"image_base64": …}`, or the image\'s own bytes when `Accept` asks for an image type.',
  },
  {
    name: 'jobs',
    description:
      'Many photos in one call: a job lists image URLs (or uploads images and zip archives of them) and the output options once, answers 202 at once, and its items are cut with the capacity the removal endpoints leave idle. Poll the job, download each result or all of them as one zip, or cancel it. A job is visible to its token\'s account only.',
  },
  {
    name: 'tokens',
    description:
      'Exchange a user token\'s Token ID (made on the dashboard or with `cutout tokens create`) for a short-lived managed token, which the removal endpoints take.',
  },
  {
    name: 'compatibility',
    description:
      'Drop-in routes for clients written for remove.bg (`/v1.0/removebg`, `/v1.0/account`) and Photoroom (`/v1/segment`): a Token ID in `X-Api-Key`, those services\' parameters, and their error shapes rather than problem+json.',
  },
] as const;

export type ApiTag = (typeof API_TAGS)[number]['name'];

/** The tag names, to put in a route's `schema.tags`. */
export const API_TAG: { readonly [T in ApiTag]: T } = { removal: 'removal', jobs: 'jobs', tokens: 'tokens', compatibility: 'compatibility' };

/**
 * @fastify/swagger's options: the document's title, Cutout's version, the tags and the two
 * ways a request proves who sent it.
 */
export function openApiOptions(version: string): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      info: { title: 'Cutout', version, description: 'Self-hosted background removal.' },
      tags: API_TAGS.map((tag) => ({ ...tag })),
      components: {
        securitySchemes: {
          managedToken: { type: 'apiKey', in: 'header', name: 'Authorization' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'A Token ID, on the remove.bg- and Photoroom-compatible routes.' },
        },
      },
    },
  };
}
