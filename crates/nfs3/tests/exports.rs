//! The exports file parser and the exports table: every form of line,
//! every option, every refusal with its line number, and how a table
//! decides who may mount and use what.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rpcrdma_nfs3::exports::{
    ClientSpec, ExportTable, Exports, ExportsError, ExportsFile, MountTarget,
};
use rpcrdma_nfs3::fs::{ClientAccess, ExportConfig, IdentityMode, NfsError, Squash};

fn parse(text: &str) -> ExportsFile {
    ExportsFile::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn refused(text: &str) -> ExportsError {
    match ExportsFile::parse(text.as_bytes()) {
        Ok(f) => panic!("{text:?} was accepted: {f:?}"),
        Err(e) => e,
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

const RW: ClientAccess = ClientAccess {
    read_only: false,
    squash: Squash::Root,
    anon: (65534, 65534),
};
const RO: ClientAccess = ClientAccess {
    read_only: true,
    squash: Squash::Root,
    anon: (65534, 65534),
};

#[test]
fn a_line_is_a_path_and_its_clients_with_their_options() {
    let f = parse("/srv/data 192.0.2.0/24(rw) build.example.org(rw,no_root_squash) *(ro)\n");
    assert_eq!(f.exports.len(), 1);
    let e = &f.exports[0];
    assert_eq!(e.path, PathBuf::from("/srv/data"));
    assert_eq!(e.line, 1);
    let clients: Vec<_> = e
        .rules
        .iter()
        .map(|r| (r.client.clone(), r.access))
        .collect();
    assert_eq!(
        clients,
        vec![
            (ClientSpec::Net(ip("192.0.2.0"), 24), RW),
            (
                ClientSpec::Host("build.example.org".into()),
                ClientAccess {
                    squash: Squash::None,
                    ..RW
                }
            ),
            (ClientSpec::Any, RO),
        ]
    );
    assert!(f.warnings.is_empty());
}

#[test]
fn defaults_are_read_only_and_root_squashed_as_linux() {
    let f = parse("/a host1 10.0.0.1()\n");
    for r in &f.exports[0].rules {
        assert_eq!(r.access, ClientAccess::default());
        assert_eq!(r.access, RO);
    }
}

#[test]
fn every_option_sets_what_it_says() {
    let one = |opts: &str| parse(&format!("/x *({opts})")).exports[0].rules[0].access;
    assert_eq!(one("rw"), RW);
    assert_eq!(one("rw,ro"), RO, "the last one wins");
    assert_eq!(one("ro,rw"), RW);
    assert_eq!(one("no_root_squash").squash, Squash::None);
    assert_eq!(one("no_root_squash,root_squash").squash, Squash::Root);
    assert_eq!(one("all_squash").squash, Squash::All);
    // all_squash wins whatever root_squash says; no_all_squash gives the
    // root squashing back as it was.
    assert_eq!(one("all_squash,no_root_squash").squash, Squash::All);
    assert_eq!(
        one("no_root_squash,all_squash,no_all_squash").squash,
        Squash::None
    );
    assert_eq!(one("all_squash,no_all_squash").squash, Squash::Root);
    assert_eq!(one("anonuid=150,anongid=100").anon, (150, 100));
    assert_eq!(one("anonuid=0").anon, (0, 65534));
    assert_eq!(one("anongid=4294967294").anon, (65534, 4_294_967_294));
    // What this server does anyway: no warning.
    let quiet = parse(
        "/x *(sync,insecure,no_subtree_check,wdelay,no_wdelay,hide,acl,no_acl,insecure_locks,secure_locks,no_auth_nlm,auth_nlm,no_pnfs,sec=sys,sec=sys:none,sec=none)",
    );
    assert!(quiet.warnings.is_empty(), "{:?}", quiet.warnings);
    assert_eq!(quiet.exports[0].rules[0].access, RO);
}

#[test]
fn options_this_server_does_not_act_on_are_warnings_with_their_line() {
    for (opt, says) in [
        ("async", "commits writes"),
        ("secure", "reserved port"),
        ("subtree_check", "no_subtree_check"),
        ("nohide", "mounted below"),
        ("crossmnt", "mounted below"),
        ("fsid=0", "fsid=0"),
        ("fsid=root", "every export at its own path"),
        ("fsid=1234", "keyed hash"),
        ("nordirplus", "READDIRPLUS"),
        ("security_label", "labels"),
        ("pnfs", "layouts"),
    ] {
        let f = parse(&format!("# comment\n\n/x *(rw,{opt})\n"));
        assert_eq!(f.warnings.len(), 1, "{opt}");
        assert_eq!(f.warnings[0].line, 3, "{opt}");
        assert!(
            f.warnings[0].message.contains(says),
            "{opt}: {}",
            f.warnings[0]
        );
        assert!(f.warnings[0].to_string().starts_with("line 3: "));
        assert_eq!(f.exports[0].rules[0].access, RW, "{opt} still applies rw");
    }
}

#[test]
fn clients_of_every_form() {
    let f = parse(
        "/x * 192.0.2.7 2001:db8::1 ::ffff:192.0.2.8 198.51.100.0/24 198.51.100.0/255.255.255.128 2001:db8::/32 0.0.0.0/0 Host-1.Example.ORG localhost\n",
    );
    let clients: Vec<_> = f.exports[0]
        .rules
        .iter()
        .map(|r| r.client.clone())
        .collect();
    assert_eq!(
        clients,
        vec![
            ClientSpec::Any,
            ClientSpec::Addr(ip("192.0.2.7")),
            ClientSpec::Addr(ip("2001:db8::1")),
            // IPv4-mapped IPv6 is the IPv4 address (the connection's peer
            // is compared the same way).
            ClientSpec::Addr(ip("192.0.2.8")),
            ClientSpec::Net(ip("198.51.100.0"), 24),
            ClientSpec::Net(ip("198.51.100.0"), 25),
            ClientSpec::Net(ip("2001:db8::"), 32),
            ClientSpec::Net(ip("0.0.0.0"), 0),
            ClientSpec::Host("host-1.example.org".into()),
            ClientSpec::Host("localhost".into()),
        ]
    );
    assert_eq!(clients[5].to_string(), "198.51.100.0/25");
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    // Host bits in a network: accepted, cleared, and said.
    let f = parse("/x 192.0.2.77/24(rw)");
    assert_eq!(
        f.exports[0].rules[0].client,
        ClientSpec::Net(ip("192.0.2.0"), 24)
    );
    assert!(
        f.warnings[0].message.contains("192.0.2.0/24"),
        "{}",
        f.warnings[0]
    );
}

#[test]
fn default_options_after_the_path_apply_to_the_clients_after_them() {
    let f = parse("/srv/pub -rw,all_squash a b(ro) -anonuid=7 c d(no_all_squash)\n");
    let r = &f.exports[0].rules;
    let all = ClientAccess {
        squash: Squash::All,
        ..RW
    };
    assert_eq!(r[0].access, all);
    assert_eq!(
        r[1].access,
        ClientAccess {
            read_only: true,
            ..all
        }
    );
    assert_eq!(
        r[2].access,
        ClientAccess {
            anon: (7, 65534),
            ..all
        }
    );
    assert_eq!(
        r[3].access,
        ClientAccess {
            squash: Squash::Root,
            anon: (7, 65534),
            ..RW
        }
    );
}

#[test]
fn comments_continuations_quotes_and_escapes() {
    let text = "# the exports\n\
                \n\
                   /srv/a   10.0.0.1(rw)   # a comment after the clients\n\
                /srv/b \\\n   10.0.0.2(rw) \\\n   10.0.0.3\n\
                \"/srv/with space\" *(ro)\n\
                /srv/oct\\040al *\n\
                /srv/a 10.0.0.9\n\
                \t\r\n\
                /srv//c/ *\r\n";
    let f = parse(text);
    let paths: Vec<_> = f.exports.iter().map(|e| (e.path.clone(), e.line)).collect();
    assert_eq!(
        paths,
        vec![
            (PathBuf::from("/srv/a"), 3),
            (PathBuf::from("/srv/b"), 4),
            (PathBuf::from("/srv/with space"), 7),
            (PathBuf::from("/srv/oct al"), 8),
            (PathBuf::from("/srv/c"), 11),
        ]
    );
    // /srv/a on two lines: its clients merged, each with its own line.
    let a: Vec<_> = f.exports[0]
        .rules
        .iter()
        .map(|r| (r.client.to_string(), r.line))
        .collect();
    assert_eq!(a, vec![("10.0.0.1".into(), 3), ("10.0.0.9".into(), 9)]);
    let b: Vec<_> = f.exports[1]
        .rules
        .iter()
        .map(|r| r.client.to_string())
        .collect();
    assert_eq!(b, vec!["10.0.0.2", "10.0.0.3"]);
    // A file of comments only holds no export.
    assert!(parse("# nothing\n   # here\n").exports.is_empty());
    assert!(parse("").exports.is_empty());
}

#[test]
fn malformed_lines_are_refused_with_their_line_and_what_to_write() {
    for (text, line, says) in [
        ("srv/data *(rw)", 1, "not an absolute path"),
        ("\n/srv/../etc *(rw)", 2, "`..`"),
        ("/srv/./x *", 1, "`.`"),
        ("/srv/data", 1, "no client is listed"),
        ("/srv/data -rw", 1, "no client is listed"),
        ("# x\n/srv/data (rw)", 2, "stand apart from a client"),
        ("/srv/data host (rw)", 1, "with no space"),
        ("/srv/data host(rw, sync)", 1, "not closed"),
        ("/srv/data host(rw", 1, "not closed"),
        ("/srv/data hostrw)", 1, "without its `(`"),
        ("/srv/data host(rw)(ro)", 1, "parentheses inside"),
        ("/srv/data host(rw,,sync)", 1, "empty option"),
        ("/srv/data host(rw,)", 1, "empty option"),
        ("/srv/data host(rwx)", 1, "unknown option `rwx`"),
        ("/srv/data host(rw=1)", 1, "takes no value"),
        ("/srv/data host(sync=yes)", 1, "takes no value"),
        ("/srv/data host(anonuid)", 1, "needs a number"),
        ("/srv/data host(anonuid=-2)", 1, "not an id"),
        ("/srv/data host(anongid=4294967295)", 1, "not an id"),
        ("/srv/data host(anonuid=nobody)", 1, "not an id"),
        ("/srv/data host(sec=krb5p)", 1, "no RPCSEC_GSS"),
        ("/srv/data host(sec=sys:krb5)", 1, "no RPCSEC_GSS"),
        ("/srv/data host(sec=foo)", 1, "not a security flavor"),
        ("/srv/data host(sec)", 1, "needs flavors"),
        ("/srv/data host(mountpoint=/srv)", 1, "not supported"),
        ("/srv/data host(mp)", 1, "not supported"),
        ("/srv/data host(refer=/a@b)", 1, "not supported"),
        ("/srv/data host(replicas=/a@b)", 1, "not supported"),
        ("/srv/data host(xprtsec=tls)", 1, "not supported"),
        ("/srv/data @trusted(rw)", 1, "NIS netgroups"),
        ("/srv/data *.example.org(rw)", 1, "reverse DNS"),
        ("/srv/data build?.lab(rw)", 1, "reverse DNS"),
        ("/srv/data build[0-9].lab(rw)", 1, "reverse DNS"),
        ("/srv/data gss/krb5(rw)", 1, "RPCSEC_GSS"),
        ("/srv/data 192.0.2.0/33", 1, "at most 32"),
        ("/srv/data 2001:db8::/129", 1, "at most 128"),
        ("/srv/data 192.0.2.0/255.0.255.0", 1, "not contiguous"),
        (
            "/srv/data 192.0.2.0/x",
            1,
            "neither a prefix length nor a netmask",
        ),
        (
            "/srv/data 2001:db8::/ffff::",
            1,
            "neither a prefix length nor a netmask",
        ),
        ("/srv/data 300.1.2.3/8", 1, "a network is an address"),
        ("/srv/data under_score", 1, "not a host name"),
        ("/srv/data a..b", 1, "not a host name"),
        ("/srv/data \"quoted\"(rw)", 1, "only the path may be quoted"),
        ("\"/srv/open *(rw)", 1, "not closed"),
        ("/srv/bad\\9 *", 1, "octal escape"),
        ("/srv/bad\\400 *", 1, "octal escape"),
        ("/a 10.0.0.1 10.0.0.1(rw)", 1, "listed twice"),
        ("/a *(ro)\n\n/a *(rw)", 3, "first on line 1"),
        ("/a 10.0.0.0/8\n/a 10.1.2.3/8", 2, "listed twice"),
    ] {
        let e = refused(text);
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains(says), "{text:?}: {e}");
        assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
    }
}

#[test]
fn arbitrary_bytes_never_panic_the_parser() {
    // A few hundred deterministic scrambles of a valid file.
    let base = b"/srv/a 10.0.0.0/8(rw,anonuid=5) \"/x y\" -ro *\n/b h(rw)\\\n c\n";
    let mut x: u32 = 0x1234_5678;
    for _ in 0..2000 {
        let mut v = base.to_vec();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let at = (x as usize) % v.len();
            v[at] = (x >> 8) as u8;
        }
        let _ = ExportsFile::parse(&v);
    }
}

// ---- The table ----

struct Dirs {
    _tmp: tempdir::Dir,
    root: PathBuf,
    base: ExportConfig,
}

mod tempdir {
    /// A directory removed on drop.
    pub(crate) struct Dir(pub(crate) std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn dirs(names: &[&str]) -> Dirs {
    let tmp = std::env::temp_dir().join(format!(
        "rpcrdma-exports-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    let root = tmp.join("x");
    for n in names {
        std::fs::create_dir_all(root.join(n)).unwrap();
    }
    let mut base = ExportConfig::new(&root, tmp.join("state"));
    base.identity = IdentityMode::ServerUser;
    Dirs {
        _tmp: tempdir::Dir(tmp),
        root,
        base,
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(1);
    h.finish()
}

fn table(d: &Dirs, text: &str) -> ExportTable {
    let text = text.replace("ROOT", d.root.to_str().unwrap());
    let f = ExportsFile::parse(text.as_bytes()).unwrap();
    ExportTable::open(&f, &d.base, None).unwrap().0
}

#[test]
fn the_most_specific_client_pattern_decides() {
    let d = dirs(&["a"]);
    let t = table(
        &d,
        "ROOT/a *(ro) 10.0.0.0/8(rw,all_squash) 10.1.0.0/16(ro,no_root_squash) 10.1.2.3(rw,no_root_squash) ::1(rw)",
    );
    let e = &t.entries()[0];
    let at = |s: &str| e.access(Some(ip(s)));
    assert_eq!(
        at("10.1.2.3"),
        Some(ClientAccess {
            squash: Squash::None,
            ..RW
        })
    );
    assert_eq!(
        at("10.1.9.9"),
        Some(ClientAccess {
            squash: Squash::None,
            ..RO
        })
    );
    assert_eq!(
        at("10.9.9.9"),
        Some(ClientAccess {
            squash: Squash::All,
            ..RW
        })
    );
    assert_eq!(at("192.0.2.1"), Some(RO));
    assert_eq!(at("::1"), Some(RW));
    assert_eq!(at("::ffff:10.1.2.3"), at("10.1.2.3"), "IPv4-mapped");
    // An unknown address matches only `*`.
    assert_eq!(e.access(None), Some(RO));
    let clients: Vec<String> = e.clients().map(|c| c.to_string()).collect();
    assert_eq!(
        clients,
        vec!["10.1.2.3", "::1", "10.1.0.0/16", "10.0.0.0/8", "*"]
    );
}

#[test]
fn a_client_not_listed_is_refused_and_host_names_match_their_addresses() {
    let d = dirs(&["a"]);
    let t = table(&d, "ROOT/a 127.0.0.2(rw) localhost(ro)");
    let e = &t.entries()[0];
    assert_eq!(e.access(Some(ip("127.0.0.2"))), Some(RW));
    // localhost resolves to 127.0.0.1 (and ::1) here.
    assert_eq!(e.access(Some(ip("127.0.0.1"))), Some(RO));
    assert_eq!(e.access(Some(ip("127.0.0.3"))), None);
    assert_eq!(e.access(None), None);
}

#[test]
fn mount_finds_the_deepest_export_that_admits_the_client() {
    let d = dirs(&["a/b/c", "a/d", "e"]);
    let t = table(
        &d,
        "ROOT/a 10.0.0.0/8(rw)\nROOT/a/b 10.0.0.1(rw)\nROOT/e 10.0.0.2(rw)",
    );
    let root = d.root.to_str().unwrap().as_bytes().to_vec();
    let p = |s: &str| [root.as_slice(), s.as_bytes()].concat();
    let at = |path: &[u8], who: &str| match t.mount(path, Some(ip(who))) {
        MountTarget::Allowed { entry, inside } => {
            format!(
                "{}+{}",
                entry.path_display(),
                String::from_utf8_lossy(&inside)
            )
        }
        MountTarget::Refused(e) => format!("refused {}", e.path_display()),
        MountTarget::NotExported => "not exported".into(),
    };
    let r = d.root.display();
    assert_eq!(at(&p("/a/b/c"), "10.0.0.1"), format!("{r}/a/b+/c"));
    // 10.0.0.7 is not a client of ROOT/a/b but of ROOT/a, which holds it.
    assert_eq!(at(&p("/a/b/c"), "10.0.0.7"), format!("{r}/a+/b/c"));
    assert_eq!(at(&p("/a"), "10.0.0.7"), format!("{r}/a+"));
    assert_eq!(at(&p("//a/./d/"), "10.0.0.7"), format!("{r}/a+/d"));
    assert_eq!(at(&p("/e"), "10.0.0.7"), format!("refused {r}/e"));
    assert_eq!(at(&p("/e"), "10.0.0.2"), format!("{r}/e+"));
    assert_eq!(at(&p("/ab"), "10.0.0.2"), "not exported");
    assert_eq!(at(b"/", "10.0.0.2"), "not exported");
    assert_eq!(at(&p("/a/../e"), "10.0.0.2"), "not exported");
    assert_eq!(at(b"relative", "10.0.0.2"), "not exported");
}

#[test]
fn handles_are_admitted_by_their_export_and_a_reload_keeps_the_exports_that_stay() {
    let d = dirs(&["a", "b"]);
    let t = table(&d, "ROOT/a 10.0.0.1(rw)\nROOT/b 10.0.0.2(ro)");
    let a = t.entries()[0].export().clone();
    let b = t.entries()[1].export().clone();
    assert_ne!(a.export_id(), b.export_id());
    let (ha, hb) = (a.root_handle(), b.root_handle());
    let x = Exports::new(t);
    let who = |s: &str| Some(ip(s));
    let adm = x.admit(&ha, who("10.0.0.1"), "TEST").unwrap();
    assert!(Arc::ptr_eq(&adm.export, &a));
    assert_eq!(adm.access, RW);
    assert_eq!(
        x.admit(&ha, who("10.0.0.2"), "TEST").unwrap_err(),
        NfsError::Acces
    );
    assert_eq!(x.admit(&hb, who("10.0.0.2"), "TEST").unwrap().access, RO);
    assert_eq!(
        x.admit(&hb, who("10.0.0.1"), "TEST").unwrap_err(),
        NfsError::Acces
    );
    // Not ours: a MAC that does not verify.
    let mut forged = ha.as_bytes().to_vec();
    forged[10] ^= 1;
    let forged = rpcrdma_nfs3::fs::FileHandle::from_bytes(&forged).unwrap();
    assert_eq!(
        x.admit(&forged, who("10.0.0.1"), "TEST").unwrap_err(),
        NfsError::BadHandle
    );
    // Reload: b is gone, a stays with other clients, the same Export.
    let text = format!("{}/a 10.0.0.2(rw)\n", d.root.display());
    let f = ExportsFile::parse(text.as_bytes()).unwrap();
    let old = x.table();
    let (t2, _) = ExportTable::open(&f, &d.base, Some(&old)).unwrap();
    x.replace(t2);
    let adm = x.admit(&ha, who("10.0.0.2"), "TEST").unwrap();
    assert!(Arc::ptr_eq(&adm.export, &a), "the export is kept as it was");
    assert_eq!(
        x.admit(&ha, who("10.0.0.1"), "TEST").unwrap_err(),
        NfsError::Acces
    );
    assert_eq!(
        x.admit(&hb, who("10.0.0.2"), "TEST").unwrap_err(),
        NfsError::Stale,
        "an export no longer served"
    );
}

#[test]
fn opening_refuses_what_cannot_be_served_with_the_line() {
    let d = dirs(&["a"]);
    let open = |text: &str| {
        let text = text.replace("ROOT", d.root.to_str().unwrap());
        let f = ExportsFile::parse(text.as_bytes()).unwrap();
        ExportTable::open(&f, &d.base, None)
            .map(|_| ())
            .unwrap_err()
    };
    let e = open("# x\nROOT/missing *");
    assert_eq!(e.line, 2);
    assert!(e.message.contains("must be an existing directory"), "{e}");
    // The same path written twice is one export (its clients merged).
    let e = refused("/srv/a *\n/srv//a/ *");
    assert_eq!(e.line, 2);
    assert!(e.message.contains("listed twice"), "{e}");
    let f = ExportsFile::parse(b"# nothing\n").unwrap();
    let e = ExportTable::open(&f, &d.base, None).unwrap_err();
    assert!(e.message.contains("lists no export"), "{e}");
    // A host name that does not resolve is a warning, and matches nobody.
    let text = format!("{}/a no-such-host.invalid(rw)", d.root.display());
    let f = ExportsFile::parse(text.as_bytes()).unwrap();
    let (t, w) = ExportTable::open(&f, &d.base, None).unwrap();
    assert!(w[0].message.contains("does not resolve"), "{}", w[0]);
    assert_eq!(t.entries()[0].access(Some(ip("127.0.0.1"))), None);
}

#[test]
fn a_symbolic_link_to_an_export_is_the_same_directory() {
    let d = dirs(&["a"]);
    std::os::unix::fs::symlink(d.root.join("a"), d.root.join("link")).unwrap();
    let text = format!("{r}/a 10.0.0.1\n{r}/link 10.0.0.2\n", r = d.root.display());
    let f = ExportsFile::parse(text.as_bytes()).unwrap();
    let e = ExportTable::open(&f, &d.base, None).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("exported as"), "{e}");
    // Exported through the link, MOUNT knows it by both paths.
    let text = format!("{r}/link 10.0.0.2\n", r = d.root.display());
    let f = ExportsFile::parse(text.as_bytes()).unwrap();
    let (t, _) = ExportTable::open(&f, &d.base, None).unwrap();
    for p in ["link", "a"] {
        let path = format!("{}/{p}", d.root.display());
        assert!(
            matches!(
                t.mount(path.as_bytes(), Some(ip("10.0.0.2"))),
                MountTarget::Allowed { .. }
            ),
            "{p}"
        );
    }
}

#[test]
fn the_example_in_dist_reads_without_a_warning() {
    let f = parse(include_str!("../../../dist/exports.example"));
    let paths: Vec<_> = f
        .exports
        .iter()
        .map(|e| e.path.display().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            "/srv/data",
            "/srv/build",
            "/srv/scratch",
            "/srv/shared docs"
        ]
    );
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    let scratch = &f.exports[2].rules;
    assert_eq!(scratch[0].access.squash, Squash::All);
    assert_eq!(scratch[0].access.anon, (2000, 2000));
    assert!(scratch[1].access.read_only);
}
