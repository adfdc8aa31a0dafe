//! Smoke version of `kproof differential`: 200 cases against a real kube-apiserver started from
//! the upstream build; prints SKIPPED with the reason when the build is not there.

use kproof::backend::upstream;
use kproof::differential;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_and_real_apiserver_agree_on_a_small_corpus() {
    let build = match upstream::build::locate(&upstream::default_upstream_dir()) {
        Ok(b) if b.has("kube-apiserver") && b.has("etcd") => b,
        Ok(_) => {
            println!("SKIPPED: kube-apiserver or etcd is not built (kproof upstream build)");
            return;
        }
        Err(e) => {
            println!("SKIPPED: no upstream build: {e}");
            return;
        }
    };
    let opts = upstream::PlaneOptions {
        kueue: false,
        kuberay: false,
        kcm_controllers: differential::KCM_CONTROLLERS.map(String::from).to_vec(),
        ..upstream::PlaneOptions::new(build)
    };
    let plane = match upstream::ControlPlane::start(opts).await {
        Ok(p) => p,
        Err(e) => {
            println!("SKIPPED: the control plane did not start: {e}");
            return;
        }
    };
    let real = upstream::client_from(&plane.kubeconfig).await.expect("a client for the real apiserver");
    let server = differential::fake_server();
    let names = differential::corpus::RunNames { namespace: "kproof-diff-smoke".into(), nonce: "smoke".into() };
    let outcomes = differential::run(&server.client(), &real, 7, 200, &names, differential::Generator::Kinds, |_| {})
        .await
        .expect("the corpus runs");
    let summary = differential::Summary::of(&outcomes);
    println!("{}", summary.table());
    plane.stop();
    assert!(
        summary.percent() >= 99.0,
        "agreement {:.1} %:\n{}",
        summary.percent(),
        differential::disagreements(7, &outcomes)
    );
}
