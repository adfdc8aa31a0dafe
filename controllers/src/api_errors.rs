//! Reading the API's refusals the way client-go's `apierrors` helpers do.

/// `errors.IsNotFound` for an object: 404 for a named object that is not there. A kind the
/// server does not serve is also a 404 ("the server could not find the requested resource"),
/// but controller-runtime reports that as "no matches for kind", a different error, and
/// controllers must not read it as "the object is gone".
pub fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404 && s.message != "the server could not find the requested resource")
}
