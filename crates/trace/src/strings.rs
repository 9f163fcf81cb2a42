//! A string interner: comms, event names and symbol names are stored once.

use std::collections::HashMap;

/// Index of an interned string in [`Strings`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StrId(pub u32);

/// An append-only string table. `StrId(0)` is always the empty string.
#[derive(Clone, Debug)]
pub struct Strings {
    list: Vec<Box<str>>,
    map: HashMap<Box<str>, StrId>,
}

impl Default for Strings {
    fn default() -> Self {
        let mut s = Strings {
            list: Vec::new(),
            map: HashMap::new(),
        };
        s.intern("");
        s
    }
}

impl Strings {
    /// An empty table (holding only the empty string).
    pub fn new() -> Self {
        Self::default()
    }

    /// Return the id of `s`, adding it if it is new.
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.map.get(s) {
            return id;
        }
        let id = StrId(self.list.len() as u32);
        self.list.push(s.into());
        self.map.insert(s.into(), id);
        id
    }

    /// Look up an already interned string without adding it.
    pub fn find(&self, s: &str) -> Option<StrId> {
        self.map.get(s).copied()
    }

    /// The string for `id` (the empty string for an unknown id).
    pub fn get(&self, id: StrId) -> &str {
        self.list.get(id.0 as usize).map(|s| &**s).unwrap_or("")
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether only the empty string is stored.
    pub fn is_empty(&self) -> bool {
        self.list.len() <= 1
    }
}
