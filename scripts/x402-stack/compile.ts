/** The local chain's contracts, compiled by solc-js (no native compiler): bytecode and ABI of each. */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.js';

const require = createRequire(import.meta.url);

export interface Compiled {
  abi: unknown[];
  /** Creation code, 0x-prefixed. */
  bytecode: `0x${string}`;
  /** Runtime code (what hardhat_setCode places), 0x-prefixed. */
  deployedBytecode: `0x${string}`;
}

const CONTRACTS_DIR = path.join(PROJECT_ROOT, 'scripts', 'x402-stack', 'contracts');

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>;
}

/** Compiles contracts/<name>.sol and returns its contract `name`; imports of @openzeppelin come from node_modules. */
export function compile(name: string): Compiled {
  const solc = require('solc') as { compile: (input: string, options: { import: (p: string) => { contents: string } | { error: string } }) => string };
  const input = {
    language: 'Solidity',
    sources: { [`${name}.sol`]: { content: fs.readFileSync(path.join(CONTRACTS_DIR, `${name}.sol`), 'utf8') } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } } },
  };
  const findImports = (importPath: string) => {
    try {
      return { contents: fs.readFileSync(require.resolve(importPath), 'utf8') };
    } catch {
      return { error: `not found: ${importPath}` };
    }
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports })) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc: ${errors.map((e) => e.formattedMessage).join('\n')}`);
  const contract = output.contracts[`${name}.sol`]![name]!;
  return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}`, deployedBytecode: `0x${contract.evm.deployedBytecode.object}` };
}
