/**
 * npm run docs:examples [-- --check] [-- FILE ...]
 * Runs the commands of README.md and docs/*.md (the `sh run` blocks) against a fresh install and
 * writes what they answered into the `output` blocks after them (scripts/docs/examples.ts says
 * how). With --check it writes nothing and exits 1 when a file shows another answer than the
 * service gives now (ids, keys and times aside), as the test does.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { documentedFiles, runAll, staleOutputs, withNewAnswers } from './docs/examples.js';

const { values, positionals } = parseArgs({ options: { check: { type: 'boolean' } }, allowPositionals: true });
const files = positionals.length ? positionals.map((f) => path.resolve(f)) : documentedFiles();
const runs = await runAll(files);
let stale = 0;
for (const run of runs) {
  const current = fs.readFileSync(run.file, 'utf8');
  const differences = staleOutputs(current, run.rendered);
  const name = path.relative(process.cwd(), run.file);
  if (values.check) {
    for (const d of differences) console.log(`${name}:${d.line}: the answer shown is not the service's now:\n--- shown\n${d.shown}\n--- now\n${d.now}\n`);
    stale += differences.length;
  } else if (differences.length > 0 || withNewAnswers(current, run.rendered) !== current) {
    fs.writeFileSync(run.file, withNewAnswers(current, run.rendered));
    console.log(`${name}: ${run.steps.length} commands run, ${differences.length} answers changed (ids and times aside), written`);
  } else {
    console.log(`${name}: ${run.steps.length} commands run, unchanged`);
  }
}
if (values.check) console.log(stale ? `${stale} answers differ: run npm run docs:examples` : `every answer is current (${runs.length} files)`);
process.exit(stale ? 1 : 0);
