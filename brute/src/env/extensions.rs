//! `Extensions`: a type map for values middleware leave for each other.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;

/// A type map for values middleware leave for each other, one value per type
/// (the idea of `http::Extensions`). Allocates nothing until the first insert.
///
/// ```
/// use brute::env::Extensions;
///
/// let mut extensions = Extensions::default();
/// extensions.insert(42u32);
/// assert_eq!(extensions.get::<u32>(), Some(&42));
/// assert_eq!(extensions.remove::<u32>(), Some(42));
/// assert!(extensions.is_empty());
/// ```
#[derive(Default)]
pub struct Extensions {
    // Boxed on purpose: 8 bytes in every `Env` instead of a 48-byte `HashMap`, and no
    // allocation until the first insert. Env moves on every turn; it stays small.
    #[allow(clippy::box_collection)]
    map: Option<Box<HashMap<TypeId, Box<dyn Any + Send + Sync>>>>,
}

impl Extensions {
    /// Stores `value`, returning the previous value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.map
            .get_or_insert_with(Default::default)
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast().ok().map(|b: Box<T>| *b))
    }

    /// The value of type `T`, if one was stored.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref())
    }

    /// The value of type `T`, mutably.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map
            .as_mut()?
            .get_mut(&TypeId::of::<T>())
            .and_then(|b| b.downcast_mut())
    }

    /// The value of type `T`, inserting `make()` first if there is none.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(
        &mut self,
        make: impl FnOnce() -> T,
    ) -> &mut T {
        let slot = self
            .map
            .get_or_insert_with(Default::default)
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(make()));
        match slot.downcast_mut::<T>() {
            Some(value) => value,
            // The map is keyed by `TypeId::of::<T>()`: the entry holds a `T`.
            None => unreachable!("the entry for a type holds a value of that type"),
        }
    }

    /// Removes and returns the value of type `T`.
    #[inline]
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        // Inlined: most envs hold nothing, and a layer that asks on every pass then
        // pays one branch.
        let map = self.map.as_mut()?;
        Self::remove_from(map)
    }

    fn remove_from<T: Send + Sync + 'static>(
        map: &mut HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    ) -> Option<T> {
        map.remove(&TypeId::of::<T>())
            .and_then(|b| b.downcast().ok().map(|b: Box<T>| *b))
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.len())
            .finish()
    }
}
