/**
 * Credentials out of the process's environment as the kernel shows it (/proc/<pid>/environ): that
 * file is read from the memory the environment was copied into when the process started, and
 * `delete process.env.X` does not touch that memory (it only unlinks X from libc's list). Anyone
 * who can read the file (this user's other processes, or this process tricked into reading a
 * file) would find the values there for as long as the process runs.
 */
import fs from 'node:fs';

/** What an erased value is overwritten with, byte for byte: visibly erased, no longer than it was. */
const ERASED = 0x2a; // '*'

/** A credential this system does not let the process erase from its environment block. */
export class SecretInEnvironmentError extends Error {
  constructor(
    readonly variables: string[],
    reason: string,
  ) {
    super(
      `${variables.join(', ')}: ${variables.length === 1 ? 'is' : 'are'} set in the environment, which stays readable in /proc/<pid>/environ, ` +
        `and this system did not let the process erase ${variables.length === 1 ? 'it' : 'them'} there (${reason}); ` +
        `give ${variables.map((name) => `${name}_FILE`).join(', ')} (the path of a file holding the value) instead`,
    );
    this.name = 'SecretInEnvironmentError';
  }
}

interface Entry {
  name: string;
  /** Byte offsets of the value within the block. */
  start: number;
  end: number;
}

/** The entries NAME=value of the block (NUL-separated) whose name is in `names` and value not empty. */
function entriesNamed(block: Buffer, names: ReadonlySet<string>): Entry[] {
  const found: Entry[] = [];
  for (let at = 0; at < block.length; ) {
    const nul = block.indexOf(0, at);
    const end = nul === -1 ? block.length : nul;
    const equals = block.indexOf(0x3d, at);
    if (equals !== -1 && equals + 1 < end && names.has(block.toString('latin1', at, equals))) {
      found.push({ name: block.toString('latin1', at, equals), start: equals + 1, end });
    }
    at = end + 1;
  }
  return found;
}

/** Where the environment block lies in this process's memory: fields 50 and 51 of /proc/self/stat (Linux 3.5+). */
function environmentAddress(): { start: number; end: number } {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  // Fields after the command name, which is in parentheses and may itself hold spaces: field 3 first.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).trim().split(' ');
  const start = Number(fields[50 - 3]);
  const end = Number(fields[51 - 3]);
  if (!(start > 0 && end > start)) throw new Error('/proc/self/stat gives no environment address');
  return { start, end };
}

function reasonOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}

/**
 * Overwrites, in this process's own memory, the values of the variables named in `secrets` and
 * `paths` as /proc/<pid>/environ shows them, and checks there that they are gone. Returns the
 * names erased. A system without that file has nothing to erase. When the write is refused or
 * does not show, the secrets are refused (SecretInEnvironmentError); `paths` (where NAME_FILE
 * files are) are left as they are. `memory` is the file of this process's memory.
 */
export function eraseFromEnvironmentBlock(secrets: readonly string[], paths: readonly string[], memory = `/proc/${process.pid}/mem`): string[] {
  const shown = '/proc/self/environ';
  let block: Buffer;
  try {
    block = fs.readFileSync(shown);
  } catch {
    return [];
  }
  const entries = entriesNamed(block, new Set([...secrets, ...paths]));
  const names = [...new Set(entries.map((e) => e.name))];
  if (entries.length === 0) return names;
  try {
    const address = environmentAddress();
    if (address.end - address.start !== block.length) throw new Error(`${shown} is not the block /proc/self/stat places`);
    const fd = fs.openSync(memory, 'r+');
    try {
      for (const entry of entries) fs.writeSync(fd, Buffer.alloc(entry.end - entry.start, ERASED), 0, entry.end - entry.start, address.start + entry.start);
    } finally {
      fs.closeSync(fd);
    }
    const after = fs.readFileSync(shown);
    for (const entry of entries) {
      if (after.subarray(entry.start, entry.end).some((byte) => byte !== ERASED)) throw new Error(`the value of ${entry.name} still shows in ${shown}`);
    }
  } catch (err) {
    const refused = names.filter((name) => secrets.includes(name));
    if (refused.length > 0) throw new SecretInEnvironmentError(refused, reasonOf(err));
    return [];
  }
  return names;
}

/** A process that started this one (directly or further up) and holds some of the secrets in its own environment. */
export interface AncestorHolding {
  pid: number;
  command: string;
  variables: string[];
}

/**
 * The processes up the chain that started this one (a shell, npm) whose environment, readable
 * to this user, still holds a value of `secrets`: this process cannot erase theirs. Stops at the
 * first it may not read.
 */
export function ancestorsHolding(secrets: readonly string[]): AncestorHolding[] {
  const holding: AncestorHolding[] = [];
  const wanted = new Set(secrets);
  const parentOf = (pid: number | 'self') => {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[4 - 3]);
  };
  try {
    for (let pid = parentOf('self'), seen = 0; pid > 0 && seen < 64; pid = parentOf(pid), seen++) {
      const variables = [...new Set(entriesNamed(fs.readFileSync(`/proc/${pid}/environ`), wanted).map((e) => e.name))];
      if (variables.length > 0) holding.push({ pid, command: fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(), variables });
    }
  } catch {
    // Not Linux, or a process of another user (or gone): nothing more this user can read either.
  }
  return holding;
}
