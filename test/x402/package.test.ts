/** @spendscope/x402 builds and packs alone: what npm would publish is its build, types and README, nothing of the service. */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.js';

const PACKAGE = path.join(PROJECT_ROOT, 'clients', 'x402');

describe('the @spendscope/x402 package', function () {
  this.timeout(120_000);

  it('builds with its own tsconfig and packs only its build, its types and its README', () => {
    execFileSync(process.execPath, [path.join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(PACKAGE, 'tsconfig.json')], { stdio: 'pipe' });
    const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PACKAGE, encoding: 'utf8' })) as { name: string; files: { path: string }[] }[];
    expect(packed!.name).to.equal('@spendscope/x402');
    expect(packed!.files.map((f) => f.path).sort()).to.deep.equal(['README.md', 'dist/index.d.ts', 'dist/index.js', 'package.json']);
    const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE, 'package.json'), 'utf8')) as { dependencies?: object; peerDependencies: Record<string, string> };
    // Only the x402 client it wraps, as a peer: the agent's own copy.
    expect(manifest.dependencies).to.equal(undefined);
    expect(Object.keys(manifest.peerDependencies)).to.deep.equal(['@x402/core']);
    const built = fs.readFileSync(path.join(PACKAGE, 'dist', 'index.js'), 'utf8');
    expect(built).to.include('export function withSpendscope');
    expect(built).to.not.match(/from '\.\.\/\.\.\/\.\.\/src\//);
  });
});
