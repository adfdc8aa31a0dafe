use fake_apiserver::ApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams};

#[tokio::test]
async fn smoke() {
    let server = ApiServer::default();
    let client = server.client();
    let ns: Api<Namespace> = Api::all(client.clone());
    let list = ns.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 4);
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("a".into());
    let c = cms.create(&PostParams::default(), &cm).await.unwrap();
    println!("{}", serde_json::to_string(&c).unwrap());
    let g = cms.get("a").await.unwrap();
    assert_eq!(g.metadata.uid, c.metadata.uid);
}
