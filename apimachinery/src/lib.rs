//! The API machinery both sides of kproof need — the fake API server and the controllers — so
//! that they agree with each other and with upstream: label and field selectors, name and label
//! rules with upstream's messages, quantities, Go durations, the clock, the CEL environment, and fields of JSON
//! objects. Pure logic: no I/O.
#![warn(missing_docs)]

pub mod cel;
pub mod clock;
pub mod duration;
pub mod go;
pub mod json;
pub mod names;
pub mod quantity;
pub mod selector;
pub mod unstructured;
pub mod validation;

pub use clock::Clock;
pub use duration::{DurationText, GoDuration, format_go_duration, parse_go_duration};
pub use quantity::Quantity;
pub use selector::{FieldSelector, LabelSelector, SelectorError};
