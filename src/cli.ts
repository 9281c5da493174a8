#!/usr/bin/env node
/**
 * The entry point (package bin, the image's CMD). It checks the Node version before anything that could fail to
 * load on an older one (undici, express), restarts itself once with its memory settings (./memory-tuning.ts), then
 * loads the command line. Only node-floor.js and memory-tuning.js, which import nothing, are imported statically.
 */
import { tunedRestart } from './memory-tuning.js';
import { floorMessage, olderThan } from './node-floor.js';

const restart = tunedRestart({
  argv: process.argv.slice(2),
  env: process.env,
  execArgv: process.execArgv,
  platform: process.platform,
  canExec: typeof process.execve === 'function',
  v8: process.versions.v8,
});

if (olderThan(process.versions.node)) {
  process.stderr.write(`${floorMessage(process.versions.node)}\n`);
  process.exit(2);
} else if (restart) {
  // Does not return: the same process goes on as `node <flags> cli.js <args>` with the settings added.
  process.execve?.(
    process.execPath,
    [process.execPath, ...restart.execArgv, ...process.argv.slice(1)],
    restart.env,
  );
} else {
  const { runCommandLine } = await import('./commands.js');
  runCommandLine(process.argv.slice(2), process.env);
}
