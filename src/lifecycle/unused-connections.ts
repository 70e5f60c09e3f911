import type { Socket } from 'node:net';
import fp from 'fastify-plugin';

/**
 * Lets a closing app's server end its connections as soon as they carry no request. Node's
 * server closes the kept-alive connections that are between two requests when it stops
 * (Fastify's `forceCloseConnections: 'idle'`), but not
 *
 * - a connection that a client opened and has sent nothing on yet (HTTP clients and browsers
 *   open them ahead of a request): closing destroys those;
 * - a kept-alive connection whose request was still under way: its answer says
 *   `Connection: close`, so the connection ends with it.
 *
 * The server's close waited for both until the client gave up or the keep-alive timeout
 * (Fastify's 72 s) ran out: a SIGTERM's drain took the whole shutdown grace and exited 1.
 * A request under way is always left to finish.
 */
export const unusedConnectionsPlugin = fp(
  async (app) => {
    const unused = new Set<Socket>();
    let closing = false;
    app.server.on('connection', (socket: Socket) => {
      unused.add(socket);
      socket.once('close', () => unused.delete(socket));
    });
    app.server.on('request', (request: { socket: Socket }) => unused.delete(request.socket));
    app.addHook('onSend', async (_request, reply, payload) => {
      if (closing) reply.header('connection', 'close');
      return payload;
    });
    app.addHook('preClose', async () => {
      closing = true;
      for (const socket of unused) socket.destroy();
    });
  },
  { name: 'cutout-unused-connections' },
);
