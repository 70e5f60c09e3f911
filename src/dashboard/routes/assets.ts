import type { FastifyPluginAsync } from 'fastify';
import { ASSETS } from '../assets/asset-files.js';

/** Serves the dashboard's {@link ASSETS} from Cutout itself: the dashboard loads nothing from elsewhere. */
export const assetRoutes: FastifyPluginAsync = async (app) => {
  for (const asset of Object.values(ASSETS)) {
    app.get(asset.path.replace('/dashboard', ''), async (_request, reply) =>
      reply.type(asset.type).header('cache-control', 'public, max-age=31536000, immutable').send(asset.body),
    );
  }
};
