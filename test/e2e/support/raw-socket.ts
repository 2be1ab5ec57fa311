/**
 * HTTP/1.1 by hand over a raw TCP socket, for clients no HTTP library would be: one that
 * sends its whole body before it reads a byte of the answer, one that sends its headers a
 * byte at a time, one that never sends anything.
 */
import net from 'node:net';

export interface RawConnection {
  readonly socket: net.Socket;
  /** Everything received so far (latin1, byte for byte). */
  received(): string;
  /** Resolves when the socket closes: whether it ended cleanly, the first error code if not, and when. */
  readonly closed: Promise<{ error?: string; at: number }>;
  /** Writes and resolves once the bytes are handed to the kernel; rejects with the write error. */
  write(data: string | Buffer): Promise<void>;
}

/** Connects; reading starts only when `read` is true (or after startReading()). */
export async function connectRaw(url: string, options: { read?: boolean } = {}): Promise<RawConnection & { startReading(): void }> {
  const target = new URL(url);
  const socket = net.connect(Number(target.port), target.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let text = '';
  let firstError: string | undefined;
  socket.on('error', (error: NodeJS.ErrnoException) => (firstError ??= error.code ?? error.message));
  const closed = new Promise<{ error?: string; at: number }>((resolve) => socket.once('close', () => resolve({ error: firstError, at: Date.now() })));
  const startReading = (): void => {
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  };
  if (options.read !== false) startReading();
  else socket.pause();
  return {
    socket,
    received: () => text,
    closed,
    startReading,
    write: (data) => new Promise<void>((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve()))),
  };
}

/** The request line and headers of a POST to `url` (Host from it unless given), ending with the blank line. */
export function postHead(url: string, headers: Record<string, string>): string {
  const target = new URL(url);
  const all = { host: target.host, ...headers };
  const lines = [`POST ${target.pathname} HTTP/1.1`, ...Object.entries(all).map(([name, value]) => `${name}: ${value}`)];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** Splits a raw HTTP/1.1 answer into status, headers (lowercase names) and body. */
export function parseResponse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete response head in ${JSON.stringify(raw.slice(0, 200))}`);
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  const length = Number(headers['content-length'] ?? raw.length);
  return { status: Number(statusLine!.split(' ')[1]), headers, body: raw.slice(end + 4, end + 4 + length) };
}
