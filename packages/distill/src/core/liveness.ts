/** Whether the owner of a conversation claim or job lease (`host:pid:uuid`) still runs. */
import { hostname } from 'node:os'

/** Instance ids of the distillers open in this process. */
export const LIVE_INSTANCES = new Set<string>()

/**
 * Default lease-owner liveness: an owner in this process is alive while its distiller is open;
 * one on this host while its pid exists; one on another host until its lease expires.
 */
export function defaultIsLeaseOwnerAlive(owner: string): boolean {
  const [host, pidText] = owner.split(':')
  if (host !== hostname()) return true
  const pid = Number(pidText)
  if (!Number.isInteger(pid) || pid <= 0) return false
  if (pid === process.pid) return LIVE_INSTANCES.has(owner)
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
