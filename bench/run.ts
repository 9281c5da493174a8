/**
 * `npm run bench`: runs every benchmark suite and prints one table. Suites run one after another (this machine is
 * small); add a suite by appending it to SUITES.
 */
import { type BenchRow, formatTable, verdict } from './report.js';
import { storeBenchmarks } from './store.js';

interface Suite {
  name: string;
  run: (log: (line: string) => void) => Promise<BenchRow[]>;
}

const SUITES: Suite[] = [{ name: 'series store vs prom-client', run: storeBenchmarks }];

async function main(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const started = performance.now();
  let missed = 0;
  for (const suite of SUITES) {
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
