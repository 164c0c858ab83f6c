//! tenure's main job, end to end: open a store, write with ETags, race two writers on one
//! ETag, run a batch, reopen and read everything back.
//!
//!     cargo run --release -p tenure --example quickstart [DIRECTORY]

use tenure::{
    Conditions, ContainerOptions, ErrorCode, ReadOptions, Store, StoreOptions, WriteOptions,
};

fn main() -> Result<(), tenure::Error> {
    let directory = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tenure-demo".to_owned());
    let store = Store::open(&directory, StoreOptions::default())?;
    println!("opened store {directory} at version {}", store.version());
    match store.create_container("inventory", &ContainerOptions::default()) {
        Ok(_) => println!("created container \"inventory\""),
        Err(error) if error.code() == ErrorCode::ContainerAlreadyExists => {
            println!("container \"inventory\" already there")
        }
        Err(error) => return Err(error),
    }

    let etag = store.put(
        "inventory",
        b"RadioInventory",
        b"count=10",
        &WriteOptions::default(),
    )?;
    println!("put RadioInventory = count=10 -> ETag {etag} (synced to disk)");

    // Two clients read the same ETag and both try to write with If-Match.
    let first = store.put(
        "inventory",
        b"RadioInventory",
        b"count=9",
        &WriteOptions::with_conditions(Conditions::if_match(etag)),
    )?;
    println!("client A: put if_match {etag} -> ok, new ETag {first}");
    match store.put(
        "inventory",
        b"RadioInventory",
        b"count=8",
        &WriteOptions::with_conditions(Conditions::if_match(etag)),
    ) {
        Err(error) => println!(
            "client B: put if_match {etag} -> {} ({}), current ETag {}",
            error.code(),
            error.status(),
            error
                .current_etag()
                .map(|etag| etag.to_string())
                .unwrap_or_default()
        ),
        Ok(_) => unreachable!("two writers with one ETag can never both win"),
    }

    // The read-modify-write loop users write around Cosmos DB, built in.
    let item = store.update("inventory", b"RadioInventory", 10, |value| {
        let count: u32 = String::from_utf8_lossy(value)
            .trim_start_matches("count=")
            .parse()
            .unwrap_or(0);
        format!("count={}", count - 1).into_bytes()
    })?;
    println!(
        "update(): {} -> ETag {}",
        String::from_utf8_lossy(item.value.as_deref().unwrap_or(&[])),
        item.etag
    );

    let mut batch = store.batch();
    batch
        .put(
            "inventory",
            b"order-1",
            b"radio x1",
            WriteOptions::default(),
        )
        .put(
            "inventory",
            b"order-2",
            b"radio x2",
            WriteOptions::default(),
        );
    let version = batch.commit()?;
    println!("batch of 2 puts committed atomically at version {version}");
    store.close()?;
    println!("closed; reopening");

    let store = Store::open(&directory, StoreOptions::default())?;
    let page = store.list("inventory", b"", 100, None, true)?;
    for item in page.items {
        println!(
            "  {} = {} (ETag {})",
            String::from_utf8_lossy(&item.key),
            String::from_utf8_lossy(item.value.as_deref().unwrap_or(&[])),
            item.etag
        );
    }
    let radio = store.get("inventory", b"RadioInventory", &ReadOptions::default())?;
    println!(
        "after reopen RadioInventory is at version {} — nothing acknowledged was lost",
        radio.version
    );
    store.close()
}
