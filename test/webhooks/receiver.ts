import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceiverMode = 200 | 500 | 'hang' | 'close' | 'redirect' | 'nul';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A real HTTP receiver on loopback whose answer the test sets. */
export interface Receiver {
  url: string;
  received: Received[];
  mode: ReceiverMode;
  close(): Promise<void>;
}

export async function startReceiver(mode: ReceiverMode = 200): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<() => void>();
  const state = { mode };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      switch (state.mode) {
        case 200:
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok '.repeat(3000));
          return;
        case 'nul':
          // A NUL byte, then multi-byte characters past the 4 KiB the log keeps.
          res.writeHead(200, { 'content-type': 'text/plain' }).end(`ok\u0000${'é'.repeat(3000)}`);
          return;
        case 500:
          res.writeHead(500).end('receiver broke');
          return;
        case 'redirect':
          res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
          return;
        case 'close':
          req.socket.destroy();
          return;
        case 'hang':
          hanging.add(() => res.destroy());
          return;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    get mode() {
      return state.mode;
    },
    set mode(m: ReceiverMode) {
      state.mode = m;
    },
    async close() {
      for (const end of hanging) end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
