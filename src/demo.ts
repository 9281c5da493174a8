/**
 * `cdn-exporter demo`: the simulator and the exporter in one process, pointed at each other. The simulator's demo
 * world has two accounts, five and three resources, DVR streams (one with breaks, one not alive) and recordings in
 * every status; the exporter starts 45 minutes back so that /metrics is full at once. Its statistics arrive late
 * (DEMO_LAG_SECONDS) and the exporter revisits each minute (`metrics.revisit`), so the late share shows.
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

/** The demo CDN's statistics are late: a minute is complete only this long after it ends. */
export const DEMO_LAG_SECONDS = 150;

export async function startDemoSimulator(seed = 1): Promise<Simulator> {
  return startSimulator(
    { seed, lagSeconds: DEMO_LAG_SECONDS, tokenLifetimeMs: DEMO_TOKEN_LIFETIME_MS },
    { host: '127.0.0.1', port: 0 },
  );
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
    // delay 1m reads the newest minutes early (the dashboards show the late share); revisit 5m makes every
    // counter end exact all the same.
    // lookback 45m: within the 50 minutes that let a Prometheus with created-timestamp zero ingestion place each
    // counter's zero at its start (docs/operations.md), so increase() shows the whole lookback there.
    metrics: { window: '1m', delay: '1m', lookback: '45m', revisit: '5m' },
    dvr: { interval: '15s' },
    recordings: { interval: '15s' },
    accounts: [
      // Commits fill the cdn-cost dashboard: demo's traffic (about 340 Mbit/s, 110 TB a month) stays under its
      // commits; acme's (about the same) is over both, so the projection and p95 panels show a breach too.
      {
        name: 'demo',
        dvr_streams: ['live/main', 'news/hd', 'sport/4k'],
        recordings: true,
        commit: { monthly_transfer: '150TB', bandwidth_p95: '500Mbps' },
      },
      {
        name: 'acme',
        dvr_streams: ['tv/channel1'],
        recordings: true,
        commit: { monthly_transfer: '80TB', bandwidth_p95: '250Mbps' },
      },
    ],
  };
  const text = stringify(file);
  return loadConfig({ file: 'demo.yml', env: {}, readFile: () => text });
}

/** The scrape target of examples/prometheus.yml: the demo on its default port. */
export const EXAMPLE_PROMETHEUS_TARGET = '127.0.0.1:9877';
const EXAMPLE_PROMETHEUS_CONFIG = 'examples/prometheus.yml';

/**
 * What the demo prints on stderr once it serves, for a person: where to look and how to scrape it. `address` is
 * the bound address (`[::]:9877`, `127.0.0.1:41234`); on every interface, the browser and Prometheus are sent to
 * the loopback address.
 */
export function demoBanner(address: string, simulatorUrl: string, scheme: 'http' | 'https' = 'http'): string {
  const port = address.slice(address.lastIndexOf(':') + 1);
  const everywhere = address.startsWith('[::]:') || address.startsWith('0.0.0.0:');
  const browse = everywhere ? `localhost:${port}` : address;
  const target = everywhere ? `127.0.0.1:${port}` : address;
  const command = `prometheus --config.file=${EXAMPLE_PROMETHEUS_CONFIG}`;
  const prometheus =
    target === EXAMPLE_PROMETHEUS_TARGET
      ? [`  Prometheus    ${command}   (scrapes ${target})`]
      : [
          `  Prometheus    scrape ${target}: ${EXAMPLE_PROMETHEUS_CONFIG} scrapes ${EXAMPLE_PROMETHEUS_TARGET}, set its`,
          `                target to ${target}, then ${command}`,
        ];
  return [
    '',
    'cdn-exporter demo: the exporter polling its built-in CDN simulator (accounts demo and acme). It starts 45',
    'minutes back, so /metrics fills within seconds.',
    '',
    `  Landing page  ${scheme}://${browse}/`,
    `  Metrics       ${scheme}://${browse}/metrics`,
    ...prometheus,
    `  Simulator     ${simulatorUrl}`,
    '',
    'Stop with Ctrl-C.',
    '',
    '',
  ].join('\n');
}

export function demoUsage(): string {
  return `Usage: cdn-exporter demo [--web.listen-address ADDR] [--log.level LEVEL] [--log.format FORMAT]

Runs the CDN simulator and the exporter in one process, the exporter polling the simulator: nothing to
configure, no CDN account needed. The simulator listens on a free loopback port and serves two accounts, demo
(five resources, DVR streams live/main, news/hd and sport/4k, four recording settings, one in each status) and
acme (three resources, stream tv/channel1). The exporter asks for 1-minute windows with a 1-minute delay and
starts 45 minutes back, so /metrics is full within seconds.

Once it serves, it prints on stderr where to look: the landing page, /metrics, and how to point Prometheus at
it (${EXAMPLE_PROMETHEUS_CONFIG} scrapes ${EXAMPLE_PROMETHEUS_TARGET}). Its log lines follow, as for run.
Stop it with Ctrl-C.

Flags:
  --web.listen-address ADDR     host:port or :port the exporter serves on (default :9877)
  --log.level LEVEL             debug | info | warn | error (default info)
  --log.format FORMAT           json | logfmt (default json)
  -h, --help                    show this help

Through npm: npm run demo -- --web.listen-address :9900
`;
}
