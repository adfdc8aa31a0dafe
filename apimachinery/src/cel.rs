//! The CEL environment Kubernetes expressions run in here: the fake API server's
//! `x-kubernetes-validations` rules and the simulated scheduler's DRA device selectors.

use cel::{Context, Env, Value as Cel};
use std::sync::{Arc, LazyLock};

/// The standard library and the `strings`, `lists` and `math` extensions.
pub static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // The extensions only declare functions; a clash would be a cel-rust defect, not input.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    let _ = env.add_extension(cel::extensions::math);
    Arc::new(env)
});

/// Evaluates a boolean expression over JSON variables. `Err` says why it did not compile, failed
/// at run time (a missing key, say) or gave something other than a bool.
pub fn evaluate_bool(expression: &str, variables: &[(&str, &serde_json::Value)]) -> Result<bool, String> {
    let program = ENV.compile(expression).map_err(|e| format!("compilation failed: {e}"))?;
    let mut ctx = Context::with_env(ENV.clone());
    for (name, value) in variables {
        ctx.add_variable(*name, *value).map_err(|e| format!("variable {name}: {e}"))?;
    }
    match program.execute(&ctx) {
        Ok(Cel::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("the expression gave {other:?}, not a bool")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_over_json() {
        let device = json!({"driver": "dev.kproof.dev", "attributes": {"dev.kproof.dev": {"index": 1}}});
        let eval = |e: &str| evaluate_bool(e, &[("device", &device)]);
        assert_eq!(eval(r#"device.driver == "dev.kproof.dev""#), Ok(true));
        assert_eq!(eval(r#"device.attributes["dev.kproof.dev"].index == 1"#), Ok(true));
        assert_eq!(eval(r#"device.attributes["dev.kproof.dev"].index > 1"#), Ok(false));
        assert!(eval(r#"device.attributes["other.dev"].index == 1"#).is_err(), "a missing domain is an error");
        assert!(eval("device.driver").is_err(), "not a bool");
        assert!(eval("device.driver ==").is_err(), "does not compile");
    }
}
