// Which devices a container may open: runc's default allow-list. mknod of any device is allowed (as
// runc allows it), reading or writing one is not unless it is listed, so a device node a root
// container makes, or one an image ships, does not open the host's disks. A privileged container
// gets every device, as with runc.

export interface DeviceRule {
  /** a: every device; c: character; b: block. */
  type: 'a' | 'c' | 'b';
  /** -1: any. */
  major: number;
  minor: number;
  /** Some of r (read), w (write), m (mknod). */
  access: string;
}

const rwm = (major: number, minor: number): DeviceRule => ({ type: 'c', major, minor, access: 'rwm' });

/** runc's default allowed devices (libcontainer's AllowedDevices, since 1.2 without tun). */
export const DEFAULT_DEVICE_RULES: readonly DeviceRule[] = [
  { type: 'c', major: -1, minor: -1, access: 'm' },
  { type: 'b', major: -1, minor: -1, access: 'm' },
  rwm(1, 3), // null
  rwm(1, 5), // zero
  rwm(1, 7), // full
  rwm(1, 8), // random
  rwm(1, 9), // urandom
  rwm(5, 0), // tty
  rwm(5, 1), // console
  rwm(5, 2), // ptmx
  rwm(136, -1), // pts
];

const ALL: DeviceRule = { type: 'a', major: -1, minor: -1, access: 'rwm' };

/** The rules of a container: every device when privileged, runc's defaults otherwise. */
export function deviceRules(privileged: boolean): DeviceRule[] {
  return privileged ? [ALL] : [...DEFAULT_DEVICE_RULES];
}

const num = (n: number) => (n < 0 ? '*' : String(n));

/** A rule as cgroup v1's devices.allow takes it: `c 1:3 rwm`. */
export const v1DeviceRule = (r: DeviceRule) => `${r.type} ${num(r.major)}:${num(r.minor)} ${r.access}`;

/** A rule as the launcher's --device takes it (cgroup v2, an eBPF filter): `c:1:3:rwm`, -1 for any. */
export const launcherDeviceRule = (r: DeviceRule) => `${r.type}:${r.major}:${r.minor}:${r.access}`;
