/**
 * `cdn-exporter demo`: the simulator and the exporter in one process, pointed at each other. The simulator's demo
 * world has two accounts, five and three resources, DVR streams (one with breaks, one not alive) and recordings in
 * every status; the exporter starts an hour back so that /metrics is full at once. Its statistics arrive late
 * (DEMO_LAG_SECONDS) and the exporter re-reads each minute (`metrics.revisit`), so the late share shows.
 */
import { stringify } from 'yaml';
import { type Config, loadConfig } from './config/index.js';
import { type Simulator, startSimulator } from './simulator/server.js';

/** The demo CDN's statistics are late: a minute is complete only this long after it ends. */
export const DEMO_LAG_SECONDS = 150;

export async function startDemoSimulator(seed = 1): Promise<Simulator> {
  return startSimulator({ seed, lagSeconds: DEMO_LAG_SECONDS }, { host: '127.0.0.1', port: 0 });
}

/** The exporter configuration of the demo, parsed by the real loader. */
export function demoConfig(simulatorUrl: string): Config {
  const file = {
    api: { base_url: simulatorUrl, token: 'demo-token', requests_per_second: 20, concurrency: 4 },
    // delay 1m reads the newest minutes early (the dashboards show the late share); revisit 5m makes every
    // counter end exact all the same.
    metrics: { window: '1m', delay: '1m', lookback: '1h', revisit: '5m' },
    dvr: { interval: '15s' },
    recordings: { interval: '15s' },
    accounts: [
      { name: 'demo', dvr_streams: ['live/main', 'news/hd', 'sport/4k'], recordings: true },
      { name: 'acme', token: 'acme-token', dvr_streams: ['tv/channel1'], recordings: true },
    ],
  };
  const text = stringify(file);
  return loadConfig({ file: 'demo.yml', env: {}, readFile: () => text });
}
