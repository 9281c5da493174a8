#!/usr/bin/env node
/**
 * The entry point (package bin, the image's CMD). It checks the Node version before anything that could fail to
 * load on an older one (undici, express), then loads the command line. Only node-floor.js, which imports
 * nothing, is imported statically here.
 */
import { floorMessage, olderThan } from './node-floor.js';

if (olderThan(process.versions.node)) {
  process.stderr.write(`${floorMessage(process.versions.node)}\n`);
  process.exit(2);
} else {
  const { runCommandLine } = await import('./commands.js');
  runCommandLine(process.argv.slice(2), process.env);
}
