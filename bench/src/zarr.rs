//! The workload as Zarr v3 through zarrs, over the same metered OpenDAL operator.
//!
//! Layout: CF's *contiguous ragged array*, as an Argo user of Zarr would
//! store profiles of different lengths: each profile variable is one 1-D
//! sharded array of every level of every profile end to end, and a 1-D
//! `row_start` array (N + 1 offsets) says where each profile begins. Per-profile
//! scalars are 1-D arrays of length N (`JULD`, `cycle_number`), strings are
//! fixed-width byte matrices (`platform_number` [N, 8] and `dataset_name`
//! [N, 16], as Argo's NetCDF stores them). `units` are array attributes.
//! Padding to the deepest profile (a 2-D [N, 119] array) would store 42 %
//! more values and gain nothing for reading one profile, so the bench does
//! not use it.
//!
//! Shards hold 2^20 elements (4 MiB of `f32`), subchunks 8 192 elements
//! (32 KiB), zstd level 3 on each subchunk: big objects for listing and
//! upload, small subchunks so that one profile costs one small read.

use std::path::Path;
use std::sync::Arc;

use opendal::Operator;
use zarrs::array::codec::ZstdCodec;
use zarrs::array::{Array, ArrayBuilder, data_type};
use zarrs::storage::AsyncReadableWritableListableStorage;
use zarrs_opendal::AsyncOpendalStore;

use crate::digest::Digest;
use crate::error::{BenchError, Result};
use crate::measure::{Costs, Step, measure, probe_index};
use crate::meter::{Meter, MeterLayer};
use crate::workload::{self, FILL, JULD_UNITS, PROFILE_ARRAYS};

/// Elements per shard (one object each).
pub const SHARD: u64 = 1 << 20;
/// Elements per subchunk (the unit of compression and of a partial read).
pub const SUBCHUNK: u64 = 8192;
/// Bytes of a fixed-width `platform_number`.
const PLATFORM_WIDTH: u64 = 8;
/// Bytes of a fixed-width dataset name.
const NAME_WIDTH: u64 = 16;

type Store = dyn zarrs::storage::AsyncReadableWritableListableStorageTraits;

/// A zarrs store over an fs operator on `dir`, metered by `meter`.
pub fn store(dir: &Path, meter: &Meter) -> Result<AsyncReadableWritableListableStorage> {
    std::fs::create_dir_all(dir)?;
    let op = Operator::new(opendal::services::Fs::default().root(&dir.to_string_lossy()))?
        .layer(MeterLayer::new(meter.clone()));
    Ok(Arc::new(AsyncOpendalStore::new(op)))
}

fn zarr<T, E: std::error::Error + Send + Sync + 'static>(
    r: std::result::Result<T, E>,
) -> Result<T> {
    r.map_err(BenchError::zarr)
}

fn units(value: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("units".into(), value.into());
    m
}

async fn create(
    store: &AsyncReadableWritableListableStorage,
    path: &str,
    builder: &mut ArrayBuilder,
) -> Result<Array<Store>> {
    let array = zarr(builder.build(store.clone(), path))?;
    zarr(array.async_store_metadata().await)?;
    Ok(array)
}

/// `shape` split into shards of `SHARD` rows and subchunks of `SUBCHUNK` rows.
fn builder(
    shape: Vec<u64>,
    dtype: zarrs::array::DataType,
    fill: impl Into<zarrs::array::builder::ArrayBuilderFillValue>,
) -> ArrayBuilder {
    let mut shard = shape.clone();
    let mut sub = shape.clone();
    if let (Some(s), Some(c)) = (shard.first_mut(), sub.first_mut()) {
        *s = SHARD;
        *c = SUBCHUNK;
    }
    let mut b = ArrayBuilder::new(shape, shard, dtype, fill);
    b.subchunk_shape(sub)
        .bytes_to_bytes_codecs(vec![Arc::new(ZstdCodec::new(
            atlas::DEFAULT_ZSTD_LEVEL,
            false,
        ))]);
    b
}

fn fixed_width(s: &str, width: u64) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.resize(width as usize, 0);
    v
}

fn from_fixed_width(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Writes `data` into `array` one shard at a time.
async fn put<T: zarrs::array::Element + Copy + Send + Sync>(
    array: &Array<Store>,
    data: &[T],
    row_width: u64,
) -> Result {
    let rows = data.len() as u64 / row_width.max(1);
    let mut start = 0;
    while start < rows {
        let end = (start + SHARD).min(rows);
        let slice = &data[(start * row_width) as usize..(end * row_width) as usize];
        if row_width == 1 {
            let rows = start..end;
            zarr(array.async_store_array_subset(&[rows], slice).await)?;
        } else {
            zarr(
                array
                    .async_store_array_subset(&[start..end, 0..row_width], slice)
                    .await,
            )?;
        }
        start = end;
    }
    Ok(())
}

/// Writes profiles `0..n` into `dir` as Zarr v3.
pub async fn write_profiles(dir: &Path, n: usize) -> Result {
    let store = store(dir, &Meter::default())?;
    let mut columns: [Vec<f32>; 3] = Default::default();
    let mut row_start = vec![0u64];
    let mut juld = Vec::with_capacity(n);
    let mut cycle = Vec::with_capacity(n);
    let mut platform = Vec::with_capacity(n * PLATFORM_WIDTH as usize);
    let mut names = Vec::with_capacity(n * NAME_WIDTH as usize);
    for i in 0..n {
        let p = workload::profile(i);
        for (col, values) in columns.iter_mut().zip(&p.arrays) {
            col.extend_from_slice(values);
        }
        row_start.push(columns[0].len() as u64);
        juld.push(p.juld);
        cycle.push(p.cycle_number);
        platform.extend(fixed_width(&p.platform_number, PLATFORM_WIDTH));
        names.extend(fixed_width(&p.name, NAME_WIDTH));
    }
    let total = columns[0].len() as u64;
    zarr(
        zarrs::group::GroupBuilder::new()
            .build(store.clone(), "/")
            .map_err(BenchError::zarr)?
            .async_store_metadata()
            .await,
    )?;
    for ((name, unit), values) in PROFILE_ARRAYS.iter().zip(&columns) {
        let mut b = builder(vec![total], data_type::float32(), FILL);
        b.attributes(units(unit)).dimension_names(["N_OBS"].into());
        let a = create(&store, &format!("/{name}"), &mut b).await?;
        put(&a, values, 1).await?;
    }
    let a = create(
        &store,
        "/row_start",
        &mut builder(vec![n as u64 + 1], data_type::uint64(), 0u64),
    )
    .await?;
    put(&a, &row_start, 1).await?;
    let mut b = builder(vec![n as u64], data_type::float64(), f64::NAN);
    b.attributes(units(JULD_UNITS));
    let a = create(&store, "/JULD", &mut b).await?;
    put(&a, &juld, 1).await?;
    let a = create(
        &store,
        "/cycle_number",
        &mut builder(vec![n as u64], data_type::int32(), -1i32),
    )
    .await?;
    put(&a, &cycle, 1).await?;
    let a = create(
        &store,
        "/platform_number",
        &mut builder(vec![n as u64, PLATFORM_WIDTH], data_type::uint8(), 0u8),
    )
    .await?;
    put(&a, &platform, PLATFORM_WIDTH).await?;
    let a = create(
        &store,
        "/dataset_name",
        &mut builder(vec![n as u64, NAME_WIDTH], data_type::uint8(), 0u8),
    )
    .await?;
    put(&a, &names, NAME_WIDTH).await?;
    Ok(())
}

/// Every array of the layout, opened (one metadata read each, concurrently).
struct Opened {
    arrays: Vec<(String, Array<Store>)>,
}

const ALL_ARRAYS: [&str; 8] = [
    "PRES",
    "TEMP",
    "PSAL",
    "row_start",
    "JULD",
    "cycle_number",
    "platform_number",
    "dataset_name",
];

impl Opened {
    async fn open(store: &AsyncReadableWritableListableStorage, names: &[&str]) -> Result<Self> {
        let opens = names.iter().map(|name| {
            let store = store.clone();
            async move {
                let a = zarr(Array::async_open(store, &format!("/{name}")).await)?;
                Ok::<_, BenchError>((name.to_string(), a))
            }
        });
        Ok(Self {
            arrays: futures::future::try_join_all(opens).await?,
        })
    }

    fn get(&self, name: &str) -> Result<&Array<Store>> {
        self.arrays
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a)
            .ok_or_else(|| BenchError::Mismatch(format!("zarr array {name} not open")))
    }

    fn len(&self, name: &str) -> Result<u64> {
        Ok(self.get(name)?.shape().first().copied().unwrap_or(0))
    }

    async fn f32s(&self, name: &str, range: std::ops::Range<u64>) -> Result<Vec<f32>> {
        zarr(
            self.get(name)?
                .async_retrieve_array_subset::<Vec<f32>>(&[range])
                .await,
        )
    }

    async fn all<T: zarrs::array::ElementOwned + Send + Sync>(&self, name: &str) -> Result<Vec<T>> {
        let a = self.get(name)?;
        zarr(
            a.async_retrieve_array_subset::<Vec<T>>(&a.subset_all())
                .await,
        )
    }

    /// Where profile `i` starts and ends (one small read).
    async fn row(&self, i: u64) -> Result<std::ops::Range<u64>> {
        let pair = i..i + 2;
        let r: Vec<u64> = zarr(
            self.get("row_start")?
                .async_retrieve_array_subset::<Vec<u64>>(&[pair])
                .await,
        )?;
        match r.as_slice() {
            [a, b] => Ok(*a..*b),
            _ => Err(BenchError::Mismatch("row_start read".into())),
        }
    }
}

fn min_max_fill(values: &[f32]) -> (f32, f32, u64) {
    let mut min = f32::INFINITY;
    let mut max = f32::NEG_INFINITY;
    let mut fill = 0;
    for v in values {
        if *v == FILL {
            fill += 1;
        } else {
            min = min.min(*v);
            max = max.max(*v);
        }
    }
    (min, max, fill)
}

/// The read steps over `dir` (metered by `meter`). Zarr keeps no statistics,
/// so the statistics steps read the values and compute them, and the sweep
/// reads the whole variable once and splits it (as a Zarr user would).
pub async fn read_steps(dir: &Path, meter: &Meter) -> Result<Costs> {
    read_steps_on(&store(dir, meter)?, meter).await
}

/// A zarrs store over `op` (already metered).
pub fn store_on(op: Operator) -> AsyncReadableWritableListableStorage {
    Arc::new(AsyncOpendalStore::new(op))
}

/// [`read_steps`] over any zarrs store (metered by `meter`).
pub async fn read_steps_on(
    store: &AsyncReadableWritableListableStorage,
    meter: &Meter,
) -> Result<Costs> {
    let store = store.clone();
    let mut costs = Costs::new();
    let (z, c) = measure(meter, Opened::open(&store, &ALL_ARRAYS)).await?;
    costs.push((Step::Open, c));
    let datasets = z.len("JULD")? as usize;

    let (_, c) = measure(meter, async {
        let names: Vec<u8> = z.all("dataset_name").await?;
        Ok(names
            .chunks(NAME_WIDTH as usize)
            .map(from_fixed_width)
            .count())
    })
    .await?;
    costs.push((Step::Catalogue, c));

    let (fills, c) = measure(meter, async {
        let temp: Vec<f32> = z.all("TEMP").await?;
        Ok(min_max_fill(&temp).2)
    })
    .await?;
    if fills != datasets.div_ceil(10) as u64 {
        return Err(BenchError::Mismatch(format!(
            "zarr: {fills} TEMP fills for {datasets}"
        )));
    }
    costs.push((Step::Stats, c));

    let (_, c) = measure(meter, async {
        let (psal, starts) = futures::try_join!(z.all::<f32>("PSAL"), z.all::<u64>("row_start"))?;
        Ok(starts
            .windows(2)
            .filter_map(|w| psal.get(w[0] as usize..w[1] as usize))
            .map(min_max_fill)
            .count())
    })
    .await?;
    costs.push((Step::StatsByDataset, c));

    let (_, c) = measure(meter, async {
        let p: Vec<u8> = z.all("platform_number").await?;
        Ok(p.chunks(PLATFORM_WIDTH as usize)
            .map(from_fixed_width)
            .count())
    })
    .await?;
    costs.push((Step::AttrsByDataset, c));

    // `units` is an attribute of the whole JULD array, read with its metadata
    // at the open. There is no per-dataset read to compare with `read_many`,
    // whose step this column leaves empty: the sweep already reads the array.
    let (_, c) = measure(meter, async {
        Ok(z.get("JULD")?.attributes().get("units").is_some())
    })
    .await?;
    costs.push((Step::ArrayAttrsByDataset, c));

    let (_, c) = measure(meter, async {
        let (temp, starts) = futures::try_join!(z.all::<f32>("TEMP"), z.all::<u64>("row_start"))?;
        Ok(starts
            .windows(2)
            .filter_map(|w| temp.get(w[0] as usize..w[1] as usize))
            .map(<[f32]>::to_vec)
            .count())
    })
    .await?;
    costs.push((Step::Sweep, c));

    let probe = probe_index(datasets) as u64;
    let (_, c) = measure(meter, async {
        let r = z.row(probe).await?;
        Ok(z.f32s("PRES", r).await?.len())
    })
    .await?;
    costs.push((Step::OneFirst, c));
    let (_, c) = measure(meter, async {
        let r = z.row(probe).await?;
        Ok(z.f32s("PRES", r).await?.len())
    })
    .await?;
    costs.push((Step::OneWarm, c));
    let (_, c) = measure(meter, async {
        let fresh = Opened::open(&store, &["row_start", "PSAL"]).await?;
        let r = fresh.row(probe).await?;
        Ok(fresh.f32s("PSAL", r).await?.len())
    })
    .await?;
    costs.push((Step::OneCold, c));
    Ok(costs)
}

/// Reads every profile of the Zarr collection at `dir` into a digest.
pub async fn digest(dir: &Path) -> Result<Digest> {
    let store = store(dir, &Meter::default())?;
    let z = Opened::open(&store, &ALL_ARRAYS).await?;
    let columns = [
        z.all::<f32>("PRES").await?,
        z.all::<f32>("TEMP").await?,
        z.all::<f32>("PSAL").await?,
    ];
    let starts: Vec<u64> = z.all("row_start").await?;
    let juld: Vec<f64> = z.all("JULD").await?;
    let cycle: Vec<i32> = z.all("cycle_number").await?;
    let platform: Vec<u8> = z.all("platform_number").await?;
    let names: Vec<u8> = z.all("dataset_name").await?;
    let mut digest = Digest::default();
    for (i, w) in starts.windows(2).enumerate() {
        let r = w[0] as usize..w[1] as usize;
        let arrays = [
            columns[0].get(r.clone()),
            columns[1].get(r.clone()),
            columns[2].get(r),
        ];
        let [Some(a), Some(b), Some(c)] = arrays else {
            return Err(BenchError::Mismatch(format!("zarr row {i} out of range")));
        };
        let text = |bytes: &[u8], width: u64| {
            bytes
                .get(i * width as usize..(i + 1) * width as usize)
                .map(from_fixed_width)
                .unwrap_or_default()
        };
        digest.add_profile(
            &text(&names, NAME_WIDTH),
            [a, b, c],
            juld.get(i).copied().unwrap_or(f64::NAN),
            &text(&platform, PLATFORM_WIDTH),
            cycle.get(i).copied().unwrap_or(-1),
        );
    }
    Ok(digest)
}
