import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A probe or a scrape (`/healthz`, `/readyz`, `/metrics`): its request lines are logged at debug, not info. */
    probe?: boolean;
  }
}

/**
 * Fastify's request logging, except for routes marked `config: { probe: true }` (health
 * checks and Prometheus scrapes), whose "incoming request" and "request completed" lines go
 * out at debug instead of info: a load balancer checking every replica every second would
 * otherwise be most of the log. Their errors are logged as any other request's.
 */
export class ProbeLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (!request.routeOptions.config.probe) return super.incomingRequest(request, reply, metadata);
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (error || !request.routeOptions.config.probe) return super.requestCompleted(error, request, reply, metadata);
    if (!this.isLogDisabled(request)) reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
