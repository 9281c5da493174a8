/**
 * Remote write of settled windows (issue 32): `createRemoteWriter` wires the client (./client.ts), the queue
 * (./queue.ts) and the metrics (./metrics.ts) from `remote_write` (src/config). The caller builds the series.
 */
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { TokenFs } from '../config/token.js';
import type { RemoteWriteConfig } from '../config/typed-config.js';
import type { Logger } from '../log.js';
import { RemoteWriteClient } from './client.js';
import { createRemoteWriteMetrics } from './metrics.js';
import { WriteQueue } from './queue.js';
import type { RemoteWriter } from './types.js';

export { countSamples, cutRequests, encodeWriteRequest, WRITE_REQUEST_PROTO } from './encode.js';
export {
  type RemoteWriter,
  RemoteWriterClosed,
  type SeriesSamples,
  type WriteBatch,
  type WriteOutcome,
} from './types.js';

export interface RemoteWriterDeps {
  clock: Clock;
  log: Logger;
  /** The exporter's registry (never prom-client's global one): the cdn_exporter_remote_write_* metrics go there. */
  registry: Registry;
  /** The backoff's jitter, [0, 1); default Math.random. */
  random?: () => number;
  /** The exporter's version, for User-Agent. */
  version: string;
  /** Where credential files are read; tests may pass their own. */
  fs?: TokenFs;
}

/**
 * A RemoteWriter sending to `config.url`. Throws at once when a TLS file cannot be read (the message names the key
 * and the file); a credential file is read at each request instead (a missing one is retried, and logged).
 */
export function createRemoteWriter(config: RemoteWriteConfig, deps: RemoteWriterDeps): RemoteWriter {
  const sender = new RemoteWriteClient(config, { clock: deps.clock, version: deps.version, fs: deps.fs });
  const metrics = createRemoteWriteMetrics(deps.registry);
  return new WriteQueue(
    { maxPendingSamples: config.queue.maxPendingSamples, maxSamplesPerSend: config.queue.maxSamplesPerSend },
    { sender, clock: deps.clock, log: deps.log, metrics, random: deps.random },
  );
}
