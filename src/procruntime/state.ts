// The process runtime's state on disk: one JSON record per sandbox and per container under the
// runtime's root, each written to a temporary file and renamed into place, so that a runtime that
// dies mid-write leaves the previous record, never half of one.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ContainerRecord, SandboxRecord } from './records.js';

export class RecordStore {
  constructor(private readonly root: string) {}

  sandboxDir(id: string): string {
    return join(this.root, 'sandboxes', id);
  }

  containerDir(id: string): string {
    return join(this.root, 'containers', id);
  }

  /** Every record on disk (a half-written one, from before renames were used, is skipped). */
  async load(): Promise<{ sandboxes: SandboxRecord[]; containers: ContainerRecord[] }> {
    await mkdir(join(this.root, 'sandboxes'), { recursive: true });
    await mkdir(join(this.root, 'containers'), { recursive: true });
    // Root's only, as containerd's: the images' setuid files and the containers' roots below are
    // nobody else's to reach from the host.
    await chmod(this.root, 0o700);
    const read = async <T>(kind: 'sandboxes' | 'containers', file: string): Promise<T[]> => {
      const out: T[] = [];
      for (const id of await readdir(join(this.root, kind))) {
        try {
          out.push(JSON.parse(await readFile(join(this.root, kind, id, file), 'utf8')) as T);
        } catch {
          /* unreadable: ignore */
        }
      }
      return out;
    };
    return { sandboxes: await read<SandboxRecord>('sandboxes', 'sandbox.json'), containers: await read<ContainerRecord>('containers', 'container.json') };
  }

  saveSandbox(s: SandboxRecord): Promise<void> {
    return this.write(this.sandboxDir(s.id), 'sandbox.json', s);
  }

  saveContainer(c: ContainerRecord): Promise<void> {
    return this.write(this.containerDir(c.id), 'container.json', c);
  }

  removeSandbox(id: string): Promise<void> {
    return rm(this.sandboxDir(id), { recursive: true, force: true });
  }

  private async write(dir: string, file: string, record: unknown): Promise<void> {
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.${file}.${randomBytes(3).toString('hex')}`);
    // Root's only: a container's record holds its environment, Secrets' values included.
    await writeFile(tmp, JSON.stringify(record), { mode: 0o600 });
    await rename(tmp, join(dir, file));
  }
}
