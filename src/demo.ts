/**
 * `cdn-exporter demo`: the simulator and the exporter in one process, pointed at each other. The simulator's demo
 * world has two accounts, five and three resources, DVR streams (one with breaks, one not alive) and recordings in
 * every status; the exporter starts an hour back so that /metrics is full at once.
 */
import { stringify } from 'yaml';
import { type Config, loadConfig } from './config/index.js';
import { type Simulator, startSimulator } from './simulator/server.js';
import { DEMO_PASSWORD, DEMO_USER } from './simulator/world.js';

/**
 * Tokens of the demo's login live 3 minutes (the real ones 6 hours), so renewal is seen within minutes: on the
 * landing page, in the log (debug) and in cdn_auth_token_expiry_timestamp_seconds.
 */
export const DEMO_TOKEN_LIFETIME_MS = 3 * 60_000;

export async function startDemoSimulator(seed = 1): Promise<Simulator> {
  return startSimulator({ seed, tokenLifetimeMs: DEMO_TOKEN_LIFETIME_MS }, { host: '127.0.0.1', port: 0 });
}

/** The exporter configuration of the demo, parsed by the real loader. */
export function demoConfig(simulatorUrl: string): Config {
  const file = {
    // The demo logs in (as a real deployment does) instead of using a fixed token.
    api: {
      base_url: simulatorUrl,
      username: DEMO_USER,
      password: DEMO_PASSWORD,
      requests_per_second: 20,
      concurrency: 4,
    },
    metrics: { window: '1m', delay: '1m', lookback: '1h' },
    dvr: { interval: '15s' },
    recordings: { interval: '15s' },
    accounts: [
      { name: 'demo', dvr_streams: ['live/main', 'news/hd', 'sport/4k'], recordings: true },
      { name: 'acme', dvr_streams: ['tv/channel1'], recordings: true },
    ],
  };
  const text = stringify(file);
  return loadConfig({ file: 'demo.yml', env: {}, readFile: () => text });
}
