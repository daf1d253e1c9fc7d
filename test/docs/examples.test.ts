/**
 * The README and docs/ hold no answer the service does not give: every command they show as
 * runnable (`sh run`) is run as written, with bash and curl, against a fresh install started as a
 * user would start it, and every answer shown after one is compared with the service's (ids, keys,
 * secrets and times aside). The README's tour is run the same way, on the bootstrap team of a
 * first start. `npm run docs:examples` writes the answers in after a change.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { comparable, documentedFiles, examplesOf, formatAnswer, runAll, staleOutputs, withNewAnswers, type FileRun } from '../../scripts/docs/examples.js';
import { PROJECT_ROOT } from '../../src/paths.js';

const README = path.join(PROJECT_ROOT, 'README.md');
const DOCS = path.join(PROJECT_ROOT, 'docs');

describe('the docs: README and docs/', function () {
  this.timeout(300_000);
  let runs: FileRun[];

  before(async () => {
    runs = await runAll();
  });

  it('runs the commands of the README and of every page that has them', () => {
    const files = runs.map((r) => path.relative(PROJECT_ROOT, r.file));
    expect(files[0]).to.equal('README.md');
    for (const page of ['docs/api.md', 'docs/ingest.md', 'docs/sdk.md', 'docs/policies-and-alerts.md', 'docs/budgets.md', 'docs/authorizations.md', 'docs/webhooks.md', 'docs/analytics.md', 'docs/bi.md', 'docs/operations.md', 'docs/deployment.md']) {
      expect(files, page).to.include(page);
    }
    for (const run of runs) {
      for (const step of run.steps) expect(step.exitCode, `${path.basename(run.file)}: ${step.command}`).to.be.oneOf([0, null]);
    }
  });

  it('every answer shown is the answer the service gives', () => {
    const stale = runs.flatMap((run) =>
      staleOutputs(fs.readFileSync(run.file, 'utf8'), run.rendered).map((d) => `${path.relative(PROJECT_ROOT, run.file)}:${d.line}\n--- shown\n${d.shown}\n--- now\n${d.now}`),
    );
    expect(stale, `answers that differ (run npm run docs:examples):\n${stale.join('\n\n')}`).to.deep.equal([]);
  });

  it("the README's tour goes through as written: a record, its summary, a policy tripped, the alert, a webhook received, a declined authorization", () => {
    const tour = runs.find((r) => r.file === README)!;
    const out = (needle: string) => tour.steps.find((s) => s.command.includes(needle))!;
    expect(tour.steps.length).to.be.at.least(8);
    expect(JSON.parse(out('"tour-1"').stdout)).to.include({ ingested: 1, alerts_created: 0 });
    expect(JSON.parse(out('analytics/summary').stdout)).to.include({ totalSpend: '0.25', count: 1 });
    expect(JSON.parse(out('/api/v1/policies').stdout)).to.include({ action: 'block', active: true });
    expect(JSON.parse(out('"tour-2"').stdout)).to.include({ ingested: 1, alerts_created: 1 });
    const alerts = JSON.parse(out('alerts?status=open').stdout) as { data: { kind: string; observed: string; limit: string }[] };
    expect(alerts.data.map((a) => [a.kind, a.observed, a.limit])).to.deep.equal([['daily', '1.15', '1.00']]);
    // The receiver, started as the tour says, printed the alert the third record opened.
    const shown = examplesOf(tour.rendered).find((e) => e.background)!.output!.body;
    expect(shown).to.match(/^receiving webhooks on http:\/\/127\.0\.0\.1:9000\//);
    expect(shown).to.match(/\nalert\.opened: critical research-bot: Agent research-bot broke the per-call limit of 1\.50/);
    const declined = JSON.parse(out('/api/v1/authorizations').stdout) as { decision: string; reasons: string[] };
    expect(declined.decision).to.equal('declined');
    expect(declined.reasons[0]).to.match(/daily limit of 1\.00/);
  });

  it('the README is a front door: short, the two commands, and a link to every page of docs/', () => {
    const readme = fs.readFileSync(README, 'utf8');
    expect(readme.split('\n').length).to.be.at.most(250);
    expect(readme).to.include('npm install && npm start');
    const pages = fs.readdirSync(DOCS).filter((f) => f.endsWith('.md'));
    expect(pages.length).to.be.at.least(10);
    for (const page of pages) expect(readme, page).to.include(`(docs/${page})`);
  });

  it('every page starts with what the reader can do with it, and every link between pages lands', () => {
    for (const file of [README, ...fs.readdirSync(DOCS).filter((f) => f.endsWith('.md')).map((f) => path.join(DOCS, f))]) {
      const text = fs.readFileSync(file, 'utf8');
      const [title, blank, first] = text.split('\n');
      expect(title, file).to.match(/^# \S/);
      expect(blank, file).to.equal('');
      expect(first, `${file}: a first paragraph, not a heading or a block`).to.match(/^[A-Z*]/);
      for (const [, target, anchor] of text.matchAll(/\]\(((?!https?:)[^)#\s]+\.(?:md|png))(?:#([^)]+))?\)/g)) {
        const linked = path.resolve(path.dirname(file), target!);
        expect(fs.existsSync(linked), `${path.relative(PROJECT_ROOT, file)} links ${target}`).to.equal(true);
        if (anchor) {
          const headings = fs.readFileSync(linked, 'utf8').split('\n').filter((l) => /^#{1,4} /.test(l))
            .map((l) => l.replace(/^#+ /, '').toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-'));
          expect(headings, `${path.relative(PROJECT_ROOT, file)} links ${target}#${anchor}`).to.include(anchor);
        }
      }
    }
  });

  it('an answer that drifts is caught: a changed amount is stale, a new id or time is not', () => {
    const shown = formatAnswer('{"id":"pol_ocam3oue5j5gldhlqvvxxhqi","amount":"1.00","createdAt":"2026-11-24T10:36:24.785Z"}');
    const sameButNewIds = formatAnswer('{"id":"pol_ocbbbbbbbbbbbbbbbbbbbbbb","amount":"1.00","createdAt":"2027-01-02T03:04:05.006Z"}');
    const otherAmount = formatAnswer('{"id":"pol_ocam3oue5j5gldhlqvvxxhqi","amount":"1.50","createdAt":"2026-11-24T10:36:24.785Z"}');
    expect(comparable(sameButNewIds)).to.equal(comparable(shown));
    expect(comparable(otherAmount)).to.not.equal(comparable(shown));
    const doc = (answer: string) => `# t\n\nx\n\n\`\`\`sh run\ncurl x\n\`\`\`\n\n\`\`\`json output\n${answer}\n\`\`\`\n`;
    expect(staleOutputs(doc(shown), doc(sameButNewIds))).to.deep.equal([]);
    expect(staleOutputs(doc(shown), doc(otherAmount))).to.have.length(1);
    // npm run docs:examples rewrites only what changed: an equal answer keeps the ids it showed.
    expect(withNewAnswers(doc(shown), doc(sameButNewIds))).to.equal(doc(shown));
    expect(withNewAnswers(doc(shown), doc(otherAmount))).to.equal(doc(otherAmount));
    expect(withNewAnswers(doc(''), doc(shown))).to.equal(doc(shown));
    expect(documentedFiles()).to.include(README);
  });
});
