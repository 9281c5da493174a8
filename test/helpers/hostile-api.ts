/**
 * A metrics API that misbehaves in ways the simulator does not model (issue 15): each answer is whatever
 * `answer(n)` builds for the n-th request (1-based), in the documented shape of `/app/metrics/v1/resources`. The
 * data part is given as ready JSON text per resource, so answers of thousands of resources cost almost nothing
 * to build (it runs on the test's event loop, beside the exporter under test). Loopback only; close() ends it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HostileApi {
  url: string;
  /** Requests answered so far. */
  readonly answered: number;
  close(): Promise<void>;
}

/** One resource of an answer: `resource`, `resource_name` and `cname`, with the given metric values. */
export function resourceJson(id: string, values: Record<string, number>, name = `name-${id}`): string {
  return JSON.stringify({ cname: `${id}.cdn.example`, resource: id, resource_name: name, ...values });
}

/**
 * `answer` gives the JSON text of each resource; a huge one is best given as a Buffer made once. It may return a
 * promise: the request is then held until it resolves (a test choosing when each answer goes).
 */
export async function startHostileApi(
  answer: (n: number) => readonly (string | Buffer)[] | Promise<readonly (string | Buffer)[]>,
): Promise<HostileApi> {
  let answered = 0;
  let asked = 0;
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/app/metrics/v1/resources') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"description":"Not found"}');
      return;
    }
    const data = await answer(++asked);
    if (res.destroyed) return;
    const head = JSON.stringify({
      start: url.searchParams.get('start'),
      end: url.searchParams.get('end'),
      account: url.searchParams.get('account'),
      metrics: url.searchParams.getAll('metric'),
    }).replace(/}$/, ',"data":[');
    const parts: Buffer[] = [Buffer.from(head)];
    data.forEach((d, i) => {
      if (i > 0) parts.push(Buffer.from(','));
      parts.push(typeof d === 'string' ? Buffer.from(d) : d);
    });
    parts.push(Buffer.from(']}'));
    let length = 0;
    for (const p of parts) length += p.length;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': length });
    for (const p of parts) res.write(p);
    res.end();
    answered++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get answered() {
      return answered;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
