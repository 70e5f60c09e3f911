import { freePort, run } from './shell.js';

/** Where one replica listens, and how a command is started in its place. */
export interface ReplicaAddress {
  name: string;
  /** The address HAProxy and the checks reach the replica at. */
  host: string;
  port: number;
  /** The address at which this replica reaches PostgreSQL and Redis. */
  servicesHost: string;
  /** The command line that runs `command` where the replica lives. */
  wrap(command: string[]): string[];
}

/** The replicas' network: their own namespaces and addresses, or loopback ports. */
export interface ClusterNetwork {
  mode: 'netns' | 'loopback';
  replicas: ReplicaAddress[];
  /** Addresses PostgreSQL and Redis must listen on for every replica (and this process) to reach them. */
  servicesListen: string[];
  /** The networks (CIDR) the replicas and this process connect to them from. */
  clientNetworks: string[];
  teardown(): Promise<void>;
}

/**
 * One network namespace per replica, joined to this host by a veth pair with a /24 of its
 * own (`10.B.i.0/24`: host `.1`, replica `.2`), so that each replica has its own address,
 * port 8080 as in production, and a kill leaves the host's network as it was. Falls back to
 * loopback ports when namespaces cannot be made (not root, no `ip`), or when asked to.
 */
export async function createNetwork(count: number, log: (line: string) => void, options: { loopback?: boolean } = {}): Promise<ClusterNetwork> {
  if (options.loopback) return loopback(count);
  try {
    return await createNamespaces(count);
  } catch (error) {
    log(`network namespaces unavailable (${(error as Error).message.split('\n')[0]}); replicas on loopback ports`);
    return await loopback(count);
  }
}

async function createNamespaces(count: number): Promise<ClusterNetwork> {
  if (process.getuid?.() !== 0) throw new Error('not root');
  const { output } = await run('ip', ['-o', 'addr']);
  // A second octet no interface here uses; the pid spreads concurrent runs apart.
  const second = Array.from({ length: 50 }, (_, i) => 200 + ((process.pid + i) % 50)).find((b) => !output.includes(` 10.${b}.`));
  if (second === undefined) throw new Error('no free 10.x.0.0/16 range');
  const tag = `cz${process.pid % 100000}`;
  const made: { ns: string; hostIf: string }[] = [];
  const teardown = async () => {
    for (const { ns, hostIf } of made) {
      await run('ip', ['netns', 'del', ns], { allowFailure: true });
      await run('ip', ['link', 'del', hostIf], { allowFailure: true });
    }
  };
  try {
    const replicas: ReplicaAddress[] = [];
    for (let i = 1; i <= count; i++) {
      const ns = `cutout-${process.pid}-r${i}`;
      const hostIf = `${tag}h${i}`;
      const nsIf = `${tag}n${i}`;
      const hostAddress = `10.${second}.${i}.1`;
      const replicaAddress = `10.${second}.${i}.2`;
      made.push({ ns, hostIf });
      await run('ip', ['netns', 'add', ns]);
      await run('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
      await run('ip', ['link', 'set', nsIf, 'netns', ns]);
      await run('ip', ['addr', 'add', `${hostAddress}/24`, 'dev', hostIf]);
      await run('ip', ['link', 'set', hostIf, 'up']);
      const inNs = (...args: string[]) => run('ip', ['netns', 'exec', ns, 'ip', ...args]);
      await inNs('addr', 'add', `${replicaAddress}/24`, 'dev', nsIf);
      await inNs('link', 'set', nsIf, 'up');
      await inNs('link', 'set', 'lo', 'up');
      // Through the host: a replica reaches the others' host addresses too (a server the run starts, on one URL for all).
      await inNs('route', 'add', 'default', 'via', hostAddress);
      replicas.push({ name: `r${i}`, host: replicaAddress, port: 8080, servicesHost: hostAddress, wrap: (command) => ['ip', 'netns', 'exec', ns, ...command] });
    }
    return {
      mode: 'netns',
      replicas,
      servicesListen: ['127.0.0.1', ...replicas.map((r) => r.servicesHost)],
      clientNetworks: ['127.0.0.1/32', ...replicas.map((r) => `${r.host}/32`)],
      teardown,
    };
  } catch (error) {
    await teardown();
    throw error;
  }
}

async function loopback(count: number): Promise<ClusterNetwork> {
  const replicas: ReplicaAddress[] = [];
  for (let i = 1; i <= count; i++) {
    replicas.push({ name: `r${i}`, host: '127.0.0.1', port: await freePort(), servicesHost: '127.0.0.1', wrap: (command) => command });
  }
  return { mode: 'loopback', replicas, servicesListen: ['127.0.0.1'], clientNetworks: ['127.0.0.1/32'], teardown: async () => {} };
}
