/**
 * A local EVM chain (hardhat 2's `hardhat node`, chain id 31337, a block per transaction) with the
 * contracts an x402 payment needs: a USDC-like token with EIP-3009, and Multicall3 at its canonical
 * address (x402's facilitator reads its verification's reasons through it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createPublicClient, createWalletClient, http, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';
import { PROJECT_ROOT } from '../../src/paths.js';
import { compile } from './compile.js';
import { freePort } from '../docs/examples.js';

/** Hardhat's development keys: public, fine on 127.0.0.1, never anywhere else. */
export const DEV_KEYS: readonly Hex[] = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
];

export const MULTICALL3: Address = '0xcA11bde05977b3631167028862bE2a173976CA11';
export const NETWORK = 'eip155:31337';

export interface Chain {
  url: string;
  /** The token's address and ABI, and what an address holds of it (atomic units). */
  token: { address: Address; abi: unknown[]; balanceOf(owner: Address): Promise<bigint> };
  stop(): Promise<void>;
}


/** Starts the chain, deploys the token (minted to `fund`, each a million), and places Multicall3. */
export async function startChain(fund: readonly Address[] = []): Promise<Chain> {
  const port = await freePort();
  const bin = path.join(PROJECT_ROOT, 'node_modules', 'hardhat', 'internal', 'cli', 'bootstrap.js');
  const child = spawn(process.execPath, [bin, '--config', path.join(PROJECT_ROOT, 'scripts', 'x402-stack', 'hardhat.config.cjs'), 'node', '--hostname', '127.0.0.1', '--port', String(port)], {
    cwd: path.join(PROJECT_ROOT, 'scripts', 'x402-stack'),
    env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true', HARDHAT_TELEMETRY_DISABLED: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await listening(child);
    const url = `http://127.0.0.1:${port}`;
    const deployed = await deploy(url, fund);
    const reader = createPublicClient({ chain: hardhat, transport: http(url) });
    const balanceOf = async (owner: Address) => (await reader.readContract({ address: deployed.address, abi: deployed.abi as never, functionName: 'balanceOf', args: [owner] })) as bigint;
    return { url, token: { ...deployed, balanceOf }, stop: () => stop(child) };
  } catch (err) {
    await stop(child);
    throw err;
  }
}

function listening(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`hardhat node did not start in 60 s:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Started HTTP and WebSocket JSON-RPC server')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`hardhat node exited (${code}):\n${output}`));
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function deploy(url: string, fund: readonly Address[]): Promise<{ address: Address; abi: unknown[] }> {
  const account = privateKeyToAccount(DEV_KEYS[0]!);
  const transport = http(url);
  const publicClient = createPublicClient({ chain: hardhat, transport });
  const wallet = createWalletClient({ chain: hardhat, transport, account });
  const multicall = compile('Multicall3');
  await publicClient.request({ method: 'hardhat_setCode' as never, params: [MULTICALL3, multicall.deployedBytecode] as never });
  const usdc = compile('TestUsdc');
  const hash = await wallet.deployContract({ abi: usdc.abi, bytecode: usdc.bytecode });
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  const address = receipt.contractAddress!;
  for (const to of fund) {
    const minted = await wallet.writeContract({ address, abi: usdc.abi, functionName: 'mint', args: [to, 1_000_000n * 10n ** 6n] });
    await publicClient.waitForTransactionReceipt({ hash: minted });
  }
  return { address, abi: usdc.abi };
}
