// Which user a container's process runs as, by containerd's rules: runAsUser / runAsUsername from
// the security context, else the image's USER; names are looked up in the image's own
// /etc/passwd and /etc/group; runAsGroup overrides the group; supplementary groups are the
// image's groups that list the user, plus the security context's.
import { InvalidArgumentError } from './errors.js';

export interface UserRequest {
  runAsUser?: number;
  runAsUsername?: string;
  runAsGroup?: number;
  supplementalGroups?: number[];
  /** The image config's User: "uid", "name", "uid:gid", "name:group". */
  imageUser?: string;
}

export interface ResolvedUser {
  uid: number;
  gid: number;
  /** Supplementary groups, the primary one not repeated. */
  groups: number[];
}

interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
}

interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

function parsePasswd(text: string): PasswdEntry[] {
  return text
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length >= 4 && /^\d+$/.test(f[2]!) && /^\d+$/.test(f[3]!))
    .map((f) => ({ name: f[0]!, uid: Number(f[2]), gid: Number(f[3]) }));
}

function parseGroup(text: string): GroupEntry[] {
  return text
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length >= 3 && /^\d+$/.test(f[2]!))
    .map((f) => ({ name: f[0]!, gid: Number(f[2]), members: (f[3] ?? '').split(',').filter(Boolean) }));
}

const isNumber = (s: string) => /^\d+$/.test(s);
/** runc's largest uid or gid (libcontainer/user). */
const MAX_ID = 2147483647;

export function resolveUser(req: UserRequest, passwdText: string, groupText: string): ResolvedUser {
  const passwd = parsePasswd(passwdText);
  const groups = parseGroup(groupText);
  let uid: number;
  let gid: number | undefined;
  let name: string | undefined;
  const byUid = (u: number) => passwd.find((p) => p.uid === u);
  if (req.runAsUser !== undefined) {
    uid = req.runAsUser;
    const p = byUid(uid);
    gid = p?.gid;
    name = p?.name;
  } else {
    const spec = req.runAsUsername || req.imageUser || '';
    const [u = '', g] = spec.split(':');
    if (u === '' || isNumber(u)) {
      uid = u === '' ? 0 : Number(u);
      const p = byUid(uid);
      gid = p?.gid;
      name = p?.name;
    } else {
      const p = passwd.find((x) => x.name === u);
      if (!p) throw new InvalidArgumentError(`user "${u}" is not in the image's /etc/passwd`);
      uid = p.uid;
      gid = p.gid;
      name = p.name;
    }
    if (g !== undefined && g !== '') {
      if (isNumber(g)) gid = Number(g);
      else {
        const e = groups.find((x) => x.name === g);
        if (!e) throw new InvalidArgumentError(`group "${g}" is not in the image's /etc/group`);
        gid = e.gid;
      }
    }
  }
  if (req.runAsGroup !== undefined) gid = req.runAsGroup;
  const primary = gid ?? 0;
  const member = name ? groups.filter((e) => e.members.includes(name!)).map((e) => e.gid) : [];
  const extra = [...new Set([...member, ...(req.supplementalGroups ?? [])])].filter((x) => x !== primary);
  // An image's USER 4294967296 is not root by wrapping around: refused, in runc's words.
  for (const id of [uid, primary, ...extra]) if (!Number.isSafeInteger(id) || id < 0 || id > MAX_ID) throw new InvalidArgumentError(`uids and gids must be in range 0-${MAX_ID}`);
  return { uid, gid: primary, groups: extra };
}
