/**
 * `npm run bench`: runs every benchmark suite and prints one table. Suites run one after another (this machine is
 * small); add a suite by appending it to SUITES.
 */

import { discoveryBenchmarks } from './discovery.js';
import { exporterBenchmarks } from './exporter.js';
import { hostileBenchmarks } from './hostile.js';
import { httpBenchmarks } from './http.js';
import { landingBenchmarks, landingScaleBenchmarks } from './landing.js';
import { parseWorkerHeapBenchmarks } from './parse-worker-heap.js';
import { process1M, process100k } from './process.js';
import { processBigAnswers } from './process-big-answers.js';
import { processRemoteWrite1M, processRemoteWrite100k } from './process-remote-write.js';
import { processShrink } from './process-shrink.js';
import { rankingBenchmarks } from './ranking.js';
import { redactBenchmarks } from './redact.js';
import { type BenchRow, formatTable, verdict } from './report.js';
import { revisitBenchmarks } from './revisit.js';
import { settledBenchmarks } from './settled.js';
import { storeBenchmarks } from './store.js';
import { webBenchmarks } from './web.js';

interface Suite {
  name: string;
  run: (log: (line: string) => void) => Promise<BenchRow[]>;
}

const SUITES: Suite[] = [
  { name: 'series store vs prom-client', run: storeBenchmarks },
  // First: it measures with and without secrets registered, and an Exporter registers its token.
  { name: 'redaction: secrets on the hot path', run: redactBenchmarks },
  { name: 'exporter: polls, stalls, catch-up', run: exporterBenchmarks },
  // `node dist/bench/run.js process-100k` runs the quick one alone.
  { name: 'exporter process: process-100k series', run: process100k },
  { name: 'exporter process: process-1M series', run: process1M },
  // `node dist/bench/run.js shrink` runs it alone.
  { name: 'exporter process: burst and shrink', run: processShrink },
  { name: 'revisit: records of late data, state file', run: revisitBenchmarks },
  // `node dist/bench/run.js ranking` runs it alone.
  { name: 'ranking: top_resources at 15,000 resources, and the ranking per 10,000', run: rankingBenchmarks },
  // `node dist/bench/run.js settled` runs it alone.
  { name: 'settled: writing a window of 1M series (remote_write)', run: settledBenchmarks },
  // `node dist/bench/run.js 'remote_write 100k'` runs it alone; the 1M pair runs only when a word names 1M
  // (`node dist/bench/run.js 'remote_write 1M'`): it takes minutes.
  { name: 'exporter process: remote_write 100k series, on and off', run: processRemoteWrite100k },
  {
    name: 'exporter process: remote_write 1M series, on and off',
    run: (log) => processRemoteWrite1M(log, process.argv.slice(2)),
  },
  // `node dist/bench/run.js discovery` runs it alone.
  { name: 'discovery: 100,000 listed accounts', run: discoveryBenchmarks },
  { name: 'http: reading big answers', run: httpBenchmarks },
  // `node dist/bench/run.js 'big DVR'` runs it alone.
  { name: 'exporter process: big DVR and recordings answers', run: processBigAnswers },
  { name: 'parse worker: heap of a 22 MB answer', run: parseWorkerHeapBenchmarks },
  { name: 'web config: HTTPS and basic auth on a scrape', run: webBenchmarks },
  // `node dist/bench/run.js hostile` runs it alone.
  {
    name: 'hostile requests: 16 KB Accept, bad escapes, guessing at the scraper address',
    run: hostileBenchmarks,
  },
  // `node dist/bench/run.js landing` runs it alone.
  { name: 'landing page: traffic at 10k resources x 50 accounts', run: landingBenchmarks },
  // `node dist/bench/run.js 'landing page at'` runs it alone.
  { name: 'landing page at 1,000 and 10,000 accounts: 20 clients reloading', run: landingScaleBenchmarks },
];

async function main(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const started = performance.now();
  let missed = 0;
  // `node dist/bench/run.js WORD...` runs only the suites whose name contains one of the words.
  const only = process.argv.slice(2);
  for (const suite of SUITES.filter((s) => only.length === 0 || only.some((w) => s.name.includes(w)))) {
    log(`== ${suite.name}`);
    const rows = await suite.run(log);
    process.stdout.write(`\n${suite.name}\n${formatTable(rows)}\n`);
    missed += rows.filter((r) => verdict(r) === 'MISS').length;
  }
  const maxRssMb = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(
    `\nratio = baseline / value (above 1: better than the baseline). peak RSS ${maxRssMb.toFixed(0)} MB, ` +
      `${((performance.now() - started) / 1000).toFixed(1)} s, ${missed} target(s) missed\n`,
  );
}

await main();
