//! Limits per client address, across its feed connections: how many it holds open, and
//! how many snapshots (the connect's, `subscribe`, `resync`) they get together. A
//! connection's own limits (`session.rs`) stop one connection; these stop a client that
//! opens many, or reconnects in a loop for a fresh snapshot each time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::time::Instant;

use super::session::{Bucket, ClientLimits};

/// Addresses tracked at most; beyond, those with no connection and nothing owed go.
pub const MAX_ADDRESSES: usize = 4096;

/// One address's connections and snapshot budget.
#[derive(Debug)]
struct AddressUse {
    connections: usize,
    snapshots: Bucket,
    last: Instant,
}

/// The feed's use per client address, shared by the hub's clients.
#[derive(Debug, Default)]
pub struct AddressQuotas {
    by_ip: Arc<Mutex<HashMap<IpAddr, AddressUse>>>,
}

/// Why an address may not open another feed connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuotaRefusal {
    /// It holds the most connections an address may.
    #[error("too many feed connections from this address (at most {0})")]
    Connections(usize),
    /// Its connections took their snapshots' worth for now.
    #[error("too many feed snapshots from this address; reconnect more slowly")]
    Snapshots,
}

/// A connection's place in its address's quota: released when dropped.
#[derive(Debug)]
pub struct AddressTicket {
    by_ip: Arc<Mutex<HashMap<IpAddr, AddressUse>>>,
    /// `None`: the address is unknown (not a TCP peer), no quota.
    ip: Option<IpAddr>,
}

fn lock(m: &Mutex<HashMap<IpAddr, AddressUse>>) -> MutexGuard<'_, HashMap<IpAddr, AddressUse>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AddressQuotas {
    /// Admits a new connection from `ip` at `now`, taking its first snapshot from the
    /// address's budget; refused when the address holds `limits.per_address` connections
    /// or has no snapshot left.
    pub fn admit(
        &self,
        ip: Option<IpAddr>,
        limits: &ClientLimits,
        now: Instant,
    ) -> Result<AddressTicket, QuotaRefusal> {
        let Some(ip) = ip else { return Ok(AddressTicket { by_ip: Arc::clone(&self.by_ip), ip: None }) };
        let mut map = lock(&self.by_ip);
        if map.len() >= MAX_ADDRESSES && !map.contains_key(&ip) {
            // Those with no connection whose budget has refilled owe nothing.
            let refill = limits.address_snapshot_every * limits.address_snapshot_burst;
            map.retain(|_, u| u.connections > 0 || now.saturating_duration_since(u.last) < refill);
            if map.len() >= MAX_ADDRESSES {
                return Err(QuotaRefusal::Connections(limits.per_address));
            }
        }
        let u = map.entry(ip).or_insert_with(|| AddressUse {
            connections: 0,
            snapshots: Bucket::new(limits.address_snapshot_burst, limits.address_snapshot_every, now),
            last: now,
        });
        u.last = now;
        if u.connections >= limits.per_address {
            return Err(QuotaRefusal::Connections(limits.per_address));
        }
        if !u.snapshots.take(now) {
            return Err(QuotaRefusal::Snapshots);
        }
        u.connections += 1;
        Ok(AddressTicket { by_ip: Arc::clone(&self.by_ip), ip: Some(ip) })
    }

    /// Connections open from `ip`.
    pub fn connections(&self, ip: IpAddr) -> usize {
        lock(&self.by_ip).get(&ip).map_or(0, |u| u.connections)
    }
}

impl AddressTicket {
    /// A ticket outside any quota (a client whose address is unknown).
    pub fn unlimited() -> AddressTicket {
        AddressTicket { by_ip: Arc::default(), ip: None }
    }

    /// Takes one snapshot from the address's budget at `now`, if one is left.
    pub fn snapshot(&self, now: Instant) -> bool {
        let Some(ip) = self.ip else { return true };
        lock(&self.by_ip).get_mut(&ip).is_none_or(|u| {
            u.last = now;
            u.snapshots.take(now)
        })
    }
}

impl Drop for AddressTicket {
    fn drop(&mut self) {
        if let Some(ip) = self.ip
            && let Some(u) = lock(&self.by_ip).get_mut(&ip)
        {
            u.connections = u.connections.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_reconnecting_in_a_loop_gets_its_snapshots_at_the_address_rate() {
        let q = AddressQuotas::default();
        let limits = ClientLimits::default();
        let ip: IpAddr = "192.0.2.9".parse().unwrap();
        let other: IpAddr = "192.0.2.10".parse().unwrap();
        let t = Instant::now();
        // Connect, resync, leave: the burst, then refused.
        let mut got = 0;
        for _ in 0..100 {
            if let Ok(ticket) = q.admit(Some(ip), &limits, t) {
                got += 1;
                got += usize::from(ticket.snapshot(t));
            }
        }
        assert_eq!(got, limits.address_snapshot_burst as usize);
        assert_eq!(q.admit(Some(ip), &limits, t).unwrap_err(), QuotaRefusal::Snapshots);
        assert_eq!(q.connections(ip), 0, "tickets released");
        // Another address is not affected; the budget refills at its rate.
        assert!(q.admit(Some(other), &limits, t).is_ok());
        assert!(q.admit(Some(ip), &limits, t + limits.address_snapshot_every).is_ok());
        // No address: no quota.
        assert!((0..1000).all(|_| q.admit(None, &limits, t).is_ok()));
    }

    #[test]
    fn the_limits_scale_with_the_connections_an_address_may_hold() {
        let d = ClientLimits::default();
        let same = ClientLimits::for_address(64);
        assert_eq!(
            (same.per_address, same.address_snapshot_burst, same.address_snapshot_every),
            (d.per_address, d.address_snapshot_burst, d.address_snapshot_every)
        );
        let proxy = ClientLimits::for_address(2000);
        assert_eq!((proxy.address_snapshot_burst, proxy.address_snapshot_every.as_micros()), (500, 3125));
    }

    #[test]
    fn an_address_holds_at_most_its_connections() {
        let q = AddressQuotas::default();
        let limits = ClientLimits { per_address: 3, ..ClientLimits::default() };
        let ip: IpAddr = "192.0.2.9".parse().unwrap();
        let t = Instant::now();
        let held: Vec<_> = (0..3).map(|_| q.admit(Some(ip), &limits, t).unwrap()).collect();
        assert_eq!(q.admit(Some(ip), &limits, t).unwrap_err(), QuotaRefusal::Connections(3));
        drop(held);
        assert!(q.admit(Some(ip), &limits, t).is_ok());
    }
}
