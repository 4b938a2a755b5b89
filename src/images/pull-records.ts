// Which credentials each image was pulled with, so that a pod may use a present image only if it
// could have pulled it (the kubelet's KubeletEnsureSecretPulledImages, on by default since 1.35,
// with its default policy NeverVerifyPreloadedImages): an image nodelet never pulled is open to
// every pod; one pulled anonymously is too; one pulled with a pod's secret needs the same secret
// (or a secret holding the same credential) before a pod may skip the pull. Kept on disk under
// <rootDir>/image_manager, so a restart forgets nothing; an intent is written before each pull, so
// an image that appears while nodelet was down mid-pull still counts as pulled by nodelet.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repositoryOf, type Credential } from './keyring.js';

interface SecretUse {
  uid: string;
  namespace: string;
  name: string;
  hash: string;
}

interface RepoAccess {
  /** Pulled without credentials: any pod may use it. */
  nodePodsAccessible?: boolean;
  secrets?: SecretUse[];
}

interface PulledRecord {
  imageRef: string;
  /** By repository (no tag or digest), as the same image may be pulled under several names. */
  credentials: Record<string, RepoAccess>;
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

export class PullRecords {
  private readonly pulled = new Map<string, PulledRecord>();
  private readonly intents = new Map<string, number>();
  private readonly pulledDir: string;
  private readonly pullingDir: string;

  constructor(dir: string) {
    this.pulledDir = join(dir, 'pulled');
    this.pullingDir = join(dir, 'pulling');
    mkdirSync(this.pulledDir, { recursive: true });
    mkdirSync(this.pullingDir, { recursive: true });
    for (const f of readdirSync(this.pulledDir)) {
      try {
        const rec = JSON.parse(readFileSync(join(this.pulledDir, f), 'utf8')) as PulledRecord;
        if (rec.imageRef) this.pulled.set(rec.imageRef, rec);
      } catch {
        rmSync(join(this.pulledDir, f), { force: true }); // a torn write: the pull will be checked again
      }
    }
    for (const f of readdirSync(this.pullingDir)) {
      try {
        const image = readFileSync(join(this.pullingDir, f), 'utf8');
        if (image) this.intents.set(image, 0);
      } catch {
        /* unreadable intent: ignored */
      }
    }
  }

  private write(dir: string, name: string, text: string): void {
    const tmp = join(dir, `.${name}.${randomBytes(4).toString('hex')}`);
    writeFileSync(tmp, text);
    renameSync(tmp, join(dir, name));
  }

  recordIntent(image: string): void {
    this.intents.set(image, (this.intents.get(image) ?? 0) + 1);
    this.write(this.pullingDir, sha(image), image);
  }

  private endIntent(image: string): void {
    const n = (this.intents.get(image) ?? 1) - 1;
    if (n > 0) return void this.intents.set(image, n);
    this.intents.delete(image);
    rmSync(join(this.pullingDir, sha(image)), { force: true });
  }

  /** A pull ended well: with `credential`, or anonymously when it is undefined. */
  recordPulled(image: string, imageRef: string, credential: Credential | undefined): void {
    const rec = this.pulled.get(imageRef) ?? { imageRef, credentials: {} };
    const repo = repositoryOf(image);
    const access = (rec.credentials[repo] ??= {});
    if (!credential) access.nodePodsAccessible = true;
    else {
      const use = { ...credential.source, hash: credential.hash };
      const secrets = (access.secrets ??= []);
      if (!secrets.some((s) => s.uid === use.uid && s.namespace === use.namespace && s.name === use.name && s.hash === use.hash)) secrets.push(use);
    }
    this.pulled.set(imageRef, rec);
    this.write(this.pulledDir, sha(imageRef), JSON.stringify(rec));
    this.endIntent(image);
  }

  recordFailed(image: string): void {
    this.endIntent(image);
  }

  /** The image is gone from the runtime: what it was pulled with no longer matters. */
  forget(imageRef: string): void {
    if (!this.pulled.delete(imageRef)) return;
    rmSync(join(this.pulledDir, sha(imageRef)), { force: true });
  }

  /**
   * Whether a pod must pull an image that is present (as imageRef) before using it, given the
   * credentials its own pull secrets hold for that image.
   */
  mustAttemptPull(image: string, imageRef: string, podCredentials: Credential[]): boolean {
    const rec = this.pulled.get(imageRef);
    // Never pulled by nodelet (preloaded): open to every pod.
    if (!rec) return this.intents.has(image);
    const access = rec.credentials[repositoryOf(image)];
    if (!access) return true;
    if (access.nodePodsAccessible) return false;
    const secrets = access.secrets ?? [];
    for (const c of podCredentials) {
      if (secrets.some((s) => s.uid === c.source.uid && s.namespace === c.source.namespace && s.name === c.source.name)) return false;
      if (secrets.some((s) => s.hash === c.hash)) {
        // Another secret with the same credential: remembered, so it is recognised by name from now on.
        this.addSecret(rec, image, c);
        return false;
      }
    }
    return true;
  }

  private addSecret(rec: PulledRecord, image: string, c: Credential): void {
    rec.credentials[repositoryOf(image)]!.secrets!.push({ ...c.source, hash: c.hash });
    this.write(this.pulledDir, sha(rec.imageRef), JSON.stringify(rec));
  }
}
