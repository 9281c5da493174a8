/** A debug-level JSON logger whose lines the test can read. */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.js';

export function captureLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(line);
      done();
    },
  });
  return { log: createLogger({ level: 'debug', destination }), lines };
}
