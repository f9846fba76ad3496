import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 that can stop forwarding, as a network partition does: while
 * partitioned it accepts connections and reads what both sides send, but delivers nothing and
 * holds what it read (TCP would retransmit it) along with any close; `heal()` delivers it all.
 */
export interface TcpProxy {
  port: number;
  partition(): void;
  heal(): void;
  /** Connections open now (client side). */
  connections(): number;
  close(): Promise<void>;
}

interface Pipe {
  client: Socket;
  upstream: Socket | null;
  /** Bytes read while partitioned, per direction, and closes held back. */
  toUpstream: Buffer[];
  toClient: Buffer[];
  clientEnded: boolean;
  upstreamEnded: boolean;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  let partitioned = false;
  const pipes = new Set<Pipe>();

  const openUpstream = (pipe: Pipe) => {
    const upstream = connect(targetPort, targetHost);
    pipe.upstream = upstream;
    upstream.on('data', (chunk: Buffer) => {
      if (partitioned) pipe.toClient.push(chunk);
      else pipe.client.write(chunk);
    });
    upstream.on('end', () => {
      pipe.upstreamEnded = true;
      if (!partitioned) pipe.client.end();
    });
    upstream.on('error', () => pipe.client.destroy());
    upstream.on('close', () => {
      if (!partitioned) pipe.client.destroy();
    });
    for (const chunk of pipe.toUpstream.splice(0)) upstream.write(chunk);
    if (pipe.clientEnded) upstream.end();
  };

  const server: Server = createServer((client) => {
    const pipe: Pipe = {
      client,
      upstream: null,
      toUpstream: [],
      toClient: [],
      clientEnded: false,
      upstreamEnded: false,
    };
    pipes.add(pipe);
    client.on('data', (chunk: Buffer) => {
      if (partitioned || !pipe.upstream) pipe.toUpstream.push(chunk);
      else pipe.upstream.write(chunk);
    });
    client.on('end', () => {
      pipe.clientEnded = true;
      if (!partitioned) pipe.upstream?.end();
    });
    client.on('error', () => undefined);
    client.on('close', () => {
      pipes.delete(pipe);
      if (!partitioned) pipe.upstream?.destroy();
    });
    // A connection opened during a partition reaches the server only when it heals.
    if (!partitioned) openUpstream(pipe);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');

  return {
    port: address.port,
    partition() {
      partitioned = true;
    },
    heal() {
      partitioned = false;
      for (const pipe of [...pipes]) {
        if (pipe.client.destroyed) {
          // The client gave up during the partition: the server hears of it now.
          pipe.upstream?.destroy();
          pipes.delete(pipe);
          continue;
        }
        if (!pipe.upstream) {
          openUpstream(pipe);
          continue;
        }
        for (const chunk of pipe.toUpstream.splice(0)) pipe.upstream.write(chunk);
        for (const chunk of pipe.toClient.splice(0)) pipe.client.write(chunk);
        if (pipe.clientEnded) pipe.upstream.end();
        if (pipe.upstreamEnded || pipe.upstream.destroyed) pipe.client.end();
      }
    },
    connections: () => [...pipes].filter((p) => !p.client.destroyed).length,
    async close() {
      for (const pipe of pipes) {
        pipe.client.destroy();
        pipe.upstream?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A TCP server that accepts every connection and never sends a byte (a hung Redis). */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no port');
  return {
    port: address.port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
